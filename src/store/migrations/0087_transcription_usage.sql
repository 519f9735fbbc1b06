-- Speech input is a provider call, billed like the others: a transcription's usage row
-- names the transcription model, with purpose 'transcription' (POST /api/v1/transcriptions,
-- src/api/speech.ts). The list keeps every purpose allowed before (0085 added 'image').
alter table usage drop constraint usage_purpose_check;
alter table usage add constraint usage_purpose_check
  check (purpose in ('reply', 'gate', 'evaluation', 'approval', 'speech', 'image', 'transcription'));
