-- Outbound webhooks: selected journal events POSTed with Standard Webhooks
-- signatures, at least once, in order per session, with backoff and a dead letter.

-- A configured endpoint as first seen: it receives events journaled from then on, not the
-- whole history of every session.
create table webhook_endpoints (
  webhook       text primary key,
  registered_at timestamptz not null default now()
);

-- How far each session's journal has been enqueued for each endpoint.
create table webhook_streams (
  webhook           text not null,
  session_id        text not null references sessions (session_id) on delete cascade,
  followed_sequence bigint not null default 0,
  primary key (webhook, session_id)
);

-- One row per (endpoint, event). `delivery_id` is the `webhook-id` header: the same on
-- every retry, so the receiver can drop a duplicate. The event is kept as sent, so
-- retention pruning the journal cannot change or lose a pending delivery.
create table webhook_deliveries (
  delivery_id      text primary key,
  webhook          text not null,
  tenant           text not null,
  session_id       text not null references sessions (session_id) on delete cascade,
  sequence         bigint not null,
  event_type       text not null,
  payload          jsonb not null,
  state            text not null default 'pending'
                   check (state in ('pending', 'delivered', 'dead')),
  attempts         integer not null default 0,
  next_attempt_at  timestamptz not null default now(),
  last_status      integer,
  last_error       text,
  lease_token      text,
  lease_expires_at timestamptz,
  created_at       timestamptz not null default now(),
  delivered_at     timestamptz,
  unique (webhook, session_id, sequence)
);

-- Due deliveries, and the earlier-pending check that keeps each session in order.
create index webhook_deliveries_pending on webhook_deliveries (webhook, session_id, sequence)
  where state = 'pending';
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at)
  where state = 'pending';
create index webhook_deliveries_by_state on webhook_deliveries (webhook, tenant, state);
