import type { Queryable } from './db.js';

/** Milliseconds from `now` to the earliest future fire time (null: none). */
export async function msUntilNextFire(db: Queryable, now: Date): Promise<number | null> {
  const found = await db.query<{ next: Date | null }>(
    'select min(next_fire_at) as next from schedules where next_fire_at > $1',
    [now],
  );
  const next = found.rows[0]?.next;
  return next ? next.getTime() - now.getTime() : null;
}
