import type { Queryable } from './db.js';
import type { PruneBatch } from './pruneBatches.js';

/**
 * One batch of the Chat SDK's expired state (migration 0040): locks, cache entries, list
 * items and queued messages whose `expires_at` has passed. The SDK already reads them as
 * absent and removes some lazily (a cache key when it is read again, a queue when it is
 * used again); the rest would stay forever. Removing them changes nothing the SDK sees, so
 * this rule always runs. The expiry is checked again on each row being deleted: a lock
 * taken over or an entry written again meanwhile stays. Subscriptions never expire (they
 * end when a thread is unsubscribed). These tables carry no tenant (their key prefix is
 * the deployment's), so only a deployment-wide run prunes them.
 */
export async function pruneChatState(
  tx: Queryable,
  options: { batchSize: number },
): Promise<PruneBatch> {
  const deleted = await tx.query<Record<string, number>>(
    `with locks as (
       delete from chat_state_locks t
        using (select key_prefix, thread_id from chat_state_locks
                where expires_at <= now() limit $1 for update skip locked) old
        where t.key_prefix = old.key_prefix and t.thread_id = old.thread_id
          and t.expires_at <= now()
        returning 1
     ), cache as (
       delete from chat_state_cache t
        using (select key_prefix, cache_key from chat_state_cache
                where expires_at <= now() limit $1 for update skip locked) old
        where t.key_prefix = old.key_prefix and t.cache_key = old.cache_key
          and t.expires_at <= now()
        returning 1
     ), lists as (
       delete from chat_state_lists t
        using (select key_prefix, list_key, seq from chat_state_lists
                where expires_at <= now() limit $1 for update skip locked) old
        where t.key_prefix = old.key_prefix and t.list_key = old.list_key and t.seq = old.seq
          and t.expires_at <= now()
        returning 1
     ), queues as (
       delete from chat_state_queues t
        using (select key_prefix, thread_id, seq from chat_state_queues
                where expires_at <= now() limit $1 for update skip locked) old
        where t.key_prefix = old.key_prefix and t.thread_id = old.thread_id and t.seq = old.seq
          and t.expires_at <= now()
        returning 1
     )
     select (select count(*) from locks)::integer as chat_state_locks,
            (select count(*) from cache)::integer as chat_state_cache,
            (select count(*) from lists)::integer as chat_state_lists,
            (select count(*) from queues)::integer as chat_state_queues`,
    [options.batchSize],
  );
  const removed = deleted.rows[0] ?? {};
  return {
    removed,
    done: Object.values(removed).every((count) => count < options.batchSize),
  };
}
