import type { Queryable } from './db.js';

/**
 * Stores a user's credential reference for a third party (the answer to an
 * `external_auth` request), replacing the one stored before: later calls reuse it without
 * asking. Runs inside the answer's transaction.
 */
export async function saveCredential(
  tx: Queryable,
  credential: { tenant: string; user: string; provider: string; reference: string },
): Promise<void> {
  await tx.query(
    `insert into credentials (tenant, user_name, provider, credential_ref)
     values ($1, $2, $3, $4)
     on conflict (tenant, user_name, provider)
     do update set credential_ref = excluded.credential_ref, updated_at = now()`,
    [credential.tenant, credential.user, credential.provider, credential.reference],
  );
}
