import type { Queryable } from './db.js';

/** A provider circuit's change of state, as the catalog shows it (last writer wins). */
export async function recordCircuit(
  db: Queryable,
  change: { provider: string; state: 'closed' | 'open' | 'half_open'; failures: number },
): Promise<void> {
  await db.query(
    `insert into provider_circuits (provider, state, failures, changed_at)
     values ($1, $2, $3, now())
     on conflict (provider) do update
        set state = excluded.state, failures = excluded.failures, changed_at = now()`,
    [change.provider, change.state, change.failures],
  );
}
