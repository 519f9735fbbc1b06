-- Client tools: tools a client declares with its message (an AG-UI front end's tools, the
-- function tools of an OpenAI request). The model may call them; the call waits for the
-- client to run it and send the result back, as an input request of kind `client_tool`.
alter table turns add column client_tools jsonb;
alter table input_requests drop constraint input_requests_kind_check;
alter table input_requests add constraint input_requests_kind_check
  check (kind in ('approval', 'question', 'budget_extension', 'reconciliation', 'external_auth',
                  'client_tool'));
