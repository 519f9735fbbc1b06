import type { Db } from './db.js';
import { outboxes, type Outbox } from './outboxes.js';

/**
 * A failed attempt to send an outbox row, written only while the sender still holds its
 * lease: the attempt counted, the error kept, the next attempt after `nextAfterMs` (the
 * backoff), and past `maxAttempts` the row dead-lettered (kept, with its error). `also`
 * sets more of the row's columns, reading parameters from `$6` on.
 */
export async function recordOutboxFailure(
  db: Db,
  outbox: Outbox,
  input: {
    id: string;
    token: string;
    error: string;
    nextAfterMs: number;
    maxAttempts: number;
    also?: { set: string; params: unknown[] };
  },
): Promise<boolean> {
  const { table, id } = outboxes[outbox];
  const updated = await db.query(
    `update ${table} r
        set attempts = attempts + 1, last_error = $3,
            next_attempt_at = now() + $4 * interval '1 millisecond',
            state = case when attempts + 1 >= $5 then 'dead' else 'pending' end,
            lease_token = null, lease_expires_at = null${input.also ? `, ${input.also.set}` : ''}
      where r.${id} = $1 and r.lease_token = $2`,
    [
      input.id,
      input.token,
      input.error.slice(0, 500),
      input.nextAfterMs,
      input.maxAttempts,
      ...(input.also?.params ?? []),
    ],
  );
  return updated.rowCount > 0;
}
