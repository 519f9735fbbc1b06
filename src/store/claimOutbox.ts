import type { Db } from './db.js';
import { outboxes, type Outbox } from './outboxes.js';

/**
 * Takes due rows of an outbox (claimReplies.ts, claimWebhookDeliveries.ts): pending,
 * their retry time come, not leased by a live sender, not waiting for an earlier row of
 * their session, for one of `senders`; oldest due first, at most `limit`. The lease
 * (token and expiry) is what makes a second process skip the row, and what a crashed
 * sender's rows wait out. `join` adds a table the returned columns read besides the row
 * (alias `r`). `due.interrupted` (returnable) says that an earlier sender claimed the row
 * and recorded no outcome (an outcome clears the lease): it died, perhaps after its
 * platform call had acted.
 */
export async function claimOutbox<T>(
  db: Db,
  outbox: Outbox,
  statement: { returning: string; join?: { table: string; on: string } },
  input: { senders: string[]; token: string; leaseMs: number; limit: number },
): Promise<T[]> {
  const { table, id, sender, pending, waitsFor, order } = outboxes[outbox];
  const claimed = await db.query<T & object>(
    `with due as (
       select r.${id}, r.lease_token is not null as interrupted from ${table} r
        where ${pending} and r.next_attempt_at <= now() and r.${sender} = any($1::text[])
          and (r.lease_expires_at is null or r.lease_expires_at < now())
          and not exists (select 1 from ${table} e where ${waitsFor})
        order by r.next_attempt_at, ${order}
        limit $4
        for update of r skip locked
     )
     update ${table} r
        set lease_token = $2, lease_expires_at = now() + $3 * interval '1 millisecond'
       from due${statement.join ? `, ${statement.join.table}` : ''}
      where r.${id} = due.${id}${statement.join ? ` and ${statement.join.on}` : ''}
      returning ${statement.returning}`,
    [input.senders, input.token, input.leaseMs, input.limit],
  );
  return claimed.rows;
}
