import type { Queryable } from './db.js';
import type { PruneBatch } from './pruneBatches.js';

/**
 * One batch of schedule fire records (one per fire time: which execution it started, if
 * any) for fire times before `olderThan`. A record exists so that a fire time starts one
 * execution however many schedulers run; the scheduler only fires times at or after its
 * schedule's `next_fire_at`, so an older record can never be needed again. Each
 * configured schedule's latest fire and latest fire that started an execution stay (the
 * listing's last execution); a schedule no longer configured keeps none.
 */
export async function pruneScheduleFires(
  tx: Queryable,
  options: { olderThan: Date; tenant: string | null; batchSize: number },
): Promise<PruneBatch> {
  const deleted = await tx.query(
    `delete from schedule_fires f
      using (select o.schedule, o.fire_time from schedule_fires o
               left join schedules s on s.name = o.schedule
              where o.fire_time < $1 and ($2::text is null or o.tenant = $2)
                and (s.name is null
                     or ((s.next_fire_at is null or o.fire_time < s.next_fire_at)
                         and o.fire_time < (select max(l.fire_time) from schedule_fires l
                                             where l.schedule = o.schedule)
                         and o.fire_time < coalesce(
                               (select max(l.fire_time) from schedule_fires l
                                 where l.schedule = o.schedule and l.execution_id is not null),
                               'infinity')))
              order by o.fire_time
              limit $3) old
      where f.schedule = old.schedule and f.fire_time = old.fire_time`,
    [options.olderThan, options.tenant, options.batchSize],
  );
  return {
    removed: { schedule_fires: deleted.rowCount },
    done: deleted.rowCount < options.batchSize,
  };
}
