import type { Queryable } from './db.js';

/**
 * The reference a user stored for a third party (`external_auth`), or null: what a tool
 * reads through `context.credentials.get(provider)`. Only the reference is stored.
 */
export async function readCredential(
  db: Queryable,
  key: { tenant: string; user: string; provider: string },
): Promise<string | null> {
  const found = await db.query<{ credential_ref: string }>(
    `select credential_ref from credentials
      where tenant = $1 and user_name = $2 and provider = $3`,
    [key.tenant, key.user, key.provider],
  );
  return found.rows[0]?.credential_ref ?? null;
}
