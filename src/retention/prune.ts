import type { Db, Queryable } from '../store/db.js';
import { pruneAdapterReplies } from '../store/pruneAdapterReplies.js';
import { pruneInBatches, type Followers, type PruneBatch } from '../store/pruneBatches.js';
import { pruneChatState } from '../store/pruneChatState.js';
import { pruneEventsBatch } from '../store/pruneEvents.js';
import { pruneMemoryEffects } from '../store/pruneMemoryEffects.js';
import { pruneScheduleFires } from '../store/pruneScheduleFires.js';
import { pruneSessions, sessionTables } from '../store/pruneSessions.js';
import { pruneUsage } from '../store/pruneUsage.js';
import { pruneWebhookDeliveries } from '../store/pruneWebhookDeliveries.js';
import type { RetentionPlan } from './plan.js';

/** Every table a retention run may remove rows from, in the report's order. */
export const retainedTables = [
  ...sessionTables,
  'usage',
  'memory_effects',
  'schedule_fires',
  'chat_state_locks',
  'chat_state_cache',
  'chat_state_lists',
  'chat_state_queues',
] as const;

export type RetainedTable = (typeof retainedTables)[number];

export interface PruneReport {
  /** Rows removed per table (every table listed, 0 where nothing went). */
  removed: Record<RetainedTable, number>;
  /** Sessions whose journal was cut back to its retained suffix (`earliest_sequence` raised). */
  journals: number;
  /** Batches (short transactions, one deleting statement each) that removed something. */
  batches: number;
  /** Another pruner held the pruning lock: this run stopped and left the rest to it. */
  skipped: boolean;
}

/**
 * One retention run: each rule of the plan in turn, each in bounded batches of one
 * deleting statement (pruneInBatches), only the rows of `tenant` when it is set. Whole
 * sessions go first (their journals with them), then old events, finished deliveries,
 * usage, the bookkeeping records, and the Chat SDK's expired state. A run that finds
 * another pruner at work stops and says so (`skipped`), reporting what it removed so far.
 */
export async function prune(
  db: Db,
  plan: RetentionPlan,
  options: {
    tenant: string | null;
    batchSize: number;
    followers: Followers;
    /** Ends the run between two batches (shutdown). */
    signal?: AbortSignal;
  },
): Promise<PruneReport> {
  const { tenant, batchSize, followers } = options;
  const rules: ((tx: Queryable) => Promise<PruneBatch>)[] = [];
  const { sessions, events, deliveries, usage } = plan;
  if (sessions !== null) {
    rules.push((tx) => pruneSessions(tx, { olderThan: sessions, tenant, batchSize, followers }));
  }
  if (events !== null) {
    rules.push((tx) => pruneEventsBatch(tx, { olderThan: events, tenant, batchSize, followers }));
  }
  if (deliveries !== null) {
    rules.push(
      (tx) => pruneWebhookDeliveries(tx, { olderThan: deliveries, tenant, batchSize }),
      (tx) => pruneAdapterReplies(tx, { olderThan: deliveries, tenant, batchSize }),
    );
  }
  if (usage !== null) rules.push((tx) => pruneUsage(tx, { olderThan: usage, tenant, batchSize }));
  if (events !== null) {
    rules.push(
      (tx) => pruneMemoryEffects(tx, { olderThan: events, tenant, batchSize }),
      (tx) => pruneScheduleFires(tx, { olderThan: events, tenant, batchSize }),
    );
  }
  if (plan.chatState && tenant === null) rules.push((tx) => pruneChatState(tx, { batchSize }));

  const report: PruneReport = {
    removed: Object.fromEntries(retainedTables.map((table) => [table, 0])) as Record<
      RetainedTable,
      number
    >,
    journals: 0,
    batches: 0,
    skipped: false,
  };
  for (const rule of rules) {
    const outcome = await pruneInBatches(db, rule, options.signal);
    for (const [table, count] of Object.entries(outcome.removed)) {
      report.removed[table as RetainedTable] += count;
    }
    report.journals += outcome.journals;
    report.batches += outcome.batches;
    if (outcome.skipped) return { ...report, skipped: true };
  }
  return report;
}
