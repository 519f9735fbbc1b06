import type { Db } from './db.js';

export interface WebhookScope {
  webhook: string;
  /** The tenants it belongs to; `*`: every tenant. */
  tenants: readonly string[] | '*';
}

/**
 * Records whom each configured endpoint belongs to: a registration per tenant (`*` for
 * every tenant), kept from the first time a process saw it, so the endpoint receives a
 * tenant's events journaled from then on, not its sessions' history. An endpoint narrowed
 * from every tenant to a list keeps, for those listed, the time it became every tenant's
 * (it has been receiving their events since). A tenant the endpoint no longer belongs to
 * loses its registration and its streams (should it come back, it starts afresh), and
 * its pending deliveries are dead-lettered: nothing of a tenant goes to an endpoint that
 * is no longer its own.
 */
export async function registerWebhooks(db: Db, scopes: readonly WebhookScope[]): Promise<void> {
  await db.transaction(async (tx) => {
    for (const { webhook, tenants } of scopes) {
      const owners = tenants === '*' ? ['*'] : [...tenants];
      // A tenant of an endpoint that was every tenant's has been receiving since then.
      await tx.query(
        `insert into webhook_endpoints (webhook, tenant, registered_at)
         select $1, unnest($2::text[]),
                coalesce((select registered_at from webhook_endpoints
                           where webhook = $1 and tenant = '*'), now())
         on conflict (webhook, tenant) do nothing`,
        [webhook, owners],
      );
      await tx.query(
        'delete from webhook_endpoints where webhook = $1 and tenant <> all($2::text[])',
        [webhook, owners],
      );
      if (tenants === '*') continue;
      await tx.query(
        'delete from webhook_streams where webhook = $1 and tenant <> all($2::text[])',
        [webhook, owners],
      );
      await tx.query(
        `update webhook_deliveries
            set state = 'dead', last_error = 'the endpoint no longer belongs to this tenant',
                lease_token = null, lease_expires_at = null
          where webhook = $1 and state = 'pending' and tenant <> all($2::text[])`,
        [webhook, owners],
      );
    }
  });
}
