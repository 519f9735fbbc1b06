import { newEvent, type NewEvent } from '../protocol/events.js';
import type { Db, Queryable, Statement } from './db.js';
import { insertEventsSql } from './appendEvents.js';
import { liveEvents, storedEventsJson } from './eventRows.js';
import { LeaseLostError, type Lease } from './types.js';
import { attemptContextSql, type AttemptContext } from './readHistory.js';
import { publishWakeup, wakeupSql } from './wakeups.js';

/**
 * The burst's turns become `running`. `turns` is found by its whole primary key: a plan
 * made while the table is nearly empty (every fresh deployment) would otherwise match on
 * `tenant` alone and filter the tenant's turns, on every call until the table is analysed.
 * A one-turn burst (nearly all) names its turn; a folded burst's list goes in an unnamed
 * statement, planned with its values on each call.
 */
const startedOne = `update turns t set state = 'running', agent_revision = coalesce($13::bigint, t.agent_revision)
        from bumped b
       where t.tenant = $12 and t.turn_id = ($8::text[])[1] and t.state in ('queued', 'running')`;
const startedMany = `update turns t set state = 'running', agent_revision = coalesce($13::bigint, t.agent_revision)
        from bumped b
       where t.tenant = $12 and t.turn_id = any($8::text[]) and t.state in ('queued', 'running')`;

const startText = (started: string) => `
    with bumped as (
      update sessions
         set last_sequence = last_sequence + jsonb_array_length($3::jsonb),
             updated_at = now(),
             attempt = $5,
             partial_output = false,
             current_turn_id = $6,
             state = 'running'
       where session_id = $1 and lease_token = $2 and ($7::bigint is null or last_sequence = $7)
       returning tenant, session_id, last_sequence
    ), inserted as (
      ${insertEventsSql('bumped', '$3')}
    ), started as (
      ${started}
    )
    select b.last_sequence,
           ${wakeupSql("'events'", 'b.session_id', 'b.last_sequence', '$4::text')} as wakeup,
           ${attemptContextSql({ session: '$1', before: '$9', limit: '$10', bytes: '$11', tenant: 'b.tenant', authors: '$14' })}
      from bumped b`;

export const startAttemptStatement: Statement = {
  name: 'start_attempt',
  text: startText(startedOne),
};
const startMany = startText(startedMany);

/**
 * Opens an attempt at answering a burst, in one statement: `attempt_reset` first if an
 * earlier attempt left partial output (its worker lost the lease), then `turn_started`;
 * the burst's turns become `running` with the agent revision they run with (recorded, so
 * every later step and attempt uses it); and what the prompt needs is read (readHistory.ts).
 * It applies only if nothing was journaled since the turns were collected (`seenSequence`):
 * a turn cancelled or admitted meanwhile makes it write nothing and return `'changed'`, and
 * the caller collects again. A lost lease throws LeaseLostError. Not "progress" for
 * parking: a worker that crashes right after this must still count toward parking.
 */
export async function startAttempt(
  db: Db,
  lease: Lease,
  burst: {
    turnIds: string[];
    attempt: number;
    resetPrevious: boolean;
    /** null: no check (a retry within a running attempt). */
    seenSequence: number | null;
    /** History before this sequence (the burst's first admission): at most `historyLimit`
     * messages and about `historyBytes` of text, newest first. */
    historyBefore: number;
    historyLimit: number;
    historyBytes: number;
    /** The burst's authors, whose saved preferences are read (none when absent). */
    authors?: string[];
    /**
     * The agent, and the revision of it the burst runs with (runtime/pinnedAgent.ts),
     * recorded on its turns; absent or null keeps what they recorded.
     */
    agent?: string;
    agentRevision?: number | null;
    /** A recorded revision that could not be loaded: journaled on `turn_started`. */
    unpinnedRevision?: number | null;
  },
): Promise<({ sequence: number } & AttemptContext) | 'changed'> {
  const lead = burst.turnIds[0] as string;
  const events: NewEvent[] = [];
  if (burst.resetPrevious) {
    events.push(newEvent('attempt_reset', lead, { attempt: burst.attempt - 1 }));
  }
  events.push(
    newEvent('turn_started', lead, {
      attempt: burst.attempt,
      turn_ids: burst.turnIds,
      ...(burst.agent === undefined
        ? {}
        : { agent: burst.agent, agent_revision: burst.agentRevision ?? null }),
      ...(burst.unpinnedRevision == null ? {} : { unpinned_revision: burst.unpinnedRevision }),
    }),
  );
  const started = await db.query<{ last_sequence: number; wakeup: string } & AttemptContext>(
    burst.turnIds.length === 1 ? startAttemptStatement : startMany,
    [
      lease.sessionId,
      lease.token,
      storedEventsJson(events),
      liveEvents(events),
      burst.attempt,
      lead,
      burst.seenSequence,
      burst.turnIds,
      burst.historyBefore,
      burst.historyLimit,
      burst.historyBytes,
      lease.tenant,
      burst.agentRevision ?? null,
      burst.authors ?? [],
    ],
  );
  const row = started.rows[0];
  if (row) {
    publishWakeup(db, row.wakeup);
    return {
      sequence: row.last_sequence,
      history: row.history,
      budgeted: row.budgeted,
      preferences: row.preferences,
    };
  }
  if (await holdsLease(db, lease)) return 'changed';
  throw new LeaseLostError(lease.sessionId);
}

/** After a gated write applied nothing: is the lease still ours (then something else changed)? */
export async function holdsLease(db: Queryable, lease: Lease): Promise<boolean> {
  const found = await db.query(
    'select 1 from sessions where session_id = $1 and lease_token = $2',
    [lease.sessionId, lease.token],
  );
  return found.rowCount > 0;
}
