import type { Config } from '../config/types.js';
import { platformNames } from '../config/platformTypes.js';
import type { Followers } from '../store/pruneBatches.js';

/**
 * Glossary:
 * - rule: what one retention key removes (docs/retention.md, table by table).
 * - cutoff: rows older than it go; null turns the rule off.
 * - followers: the configured platforms and webhook endpoints, whose cursors in a journal
 *   keep the events they have not read yet (and the session they belong to).
 */
export interface RetentionPlan {
  /** Journal events, and the bookkeeping records of what happened (fires, memory effects). */
  events: Date | null;
  /** Finished copies of journal events sent elsewhere: webhook deliveries, platform outbox. */
  deliveries: Date | null;
  /** Whole idle sessions, with everything that hangs off them. */
  sessions: Date | null;
  /** Usage (billing) rows. */
  usage: Date | null;
  /** The Chat SDK's expired state (deployment-wide runs only: its tables carry no tenant). */
  chatState: boolean;
}

/** The rules a manual prune may run (`rules`); `events` and `deliveries` by default. */
export const pruneRules = ['events', 'deliveries', 'sessions', 'usage'] as const;

const day = 86_400_000;

/** The plan of `retention.*` at `now`: what a worker's periodic run removes. */
export function planOf(retention: Config['retention'], now: number): RetentionPlan {
  const cutoff = (days: number | null) => (days === null ? null : new Date(now - days * day));
  return {
    events: cutoff(retention.keepEventsDays),
    deliveries: cutoff(retention.keepDeliveriesDays),
    sessions: cutoff(retention.keepSessionsDays),
    usage: cutoff(retention.keepUsageDays),
    chatState: true,
  };
}

/** The followers whose unread journal events retention keeps. */
export function followersOf(config: Pick<Config, 'adapters' | 'webhooks'>): Followers {
  return {
    adapters: platformNames.filter((name) => config.adapters[name] !== undefined),
    webhooks: Object.keys(config.webhooks),
  };
}
