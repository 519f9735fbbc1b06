-- Outbound webhooks belong to tenants (`webhooks.X.tenants`): an endpoint follows only the
-- sessions of the tenants it belongs to. Its registration is kept per tenant ('*': every
-- tenant, an endpoint of the operator's), so that it receives a tenant's events from the
-- time it first belonged to that tenant. Endpoints registered before were every tenant's.
alter table webhook_endpoints add column tenant text not null default '*';
alter table webhook_endpoints drop constraint webhook_endpoints_pkey;
alter table webhook_endpoints add primary key (webhook, tenant);
alter table webhook_endpoints alter column tenant drop default;

-- A stream follows one session of one tenant: when an endpoint stops belonging to a
-- tenant, that tenant's streams are dropped by it.
alter table webhook_streams add column tenant text;
update webhook_streams w set tenant = s.tenant from sessions s where s.session_id = w.session_id;
alter table webhook_streams alter column tenant set not null;
