-- A generated image is a provider call, billed like the others: its usage row names the
-- image model, with purpose 'image' (the generate_image tool, src/tools/generateImage.ts).
-- The list keeps every purpose allowed before (0084 added 'speech').
alter table usage drop constraint usage_purpose_check;
alter table usage add constraint usage_purpose_check
  check (purpose in ('reply', 'gate', 'evaluation', 'approval', 'speech', 'image'));
