-- The model catalog: what each configured provider offers, with capabilities.
-- Deployment-wide, not per tenant: providers and their models are configuration, which
-- every tenant shares. A model the provider stops listing is marked `removed`, never
-- deleted, so history and usage rows keep a model to point at.

create table models (
  provider           text not null,            -- the configured provider name
  model_id           text not null,
  kind               text not null,            -- the provider's kind (openai, anthropic...)
  display_name       text,
  -- null: nobody said (neither the provider, the shipped table nor the configuration)
  tools              boolean,
  vision             boolean,
  reasoning          boolean,
  context_window     integer,
  max_output_tokens  integer,
  -- `listing`: the provider listed it; `config`: only a `models:` override names it
  source             text not null check (source in ('listing', 'config')),
  status             text not null default 'active' check (status in ('active', 'removed')),
  first_seen_at      timestamptz not null default now(),
  last_seen_at       timestamptz not null default now(),
  removed_at         timestamptz,
  primary key (provider, model_id)
);
