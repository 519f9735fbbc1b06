import type { Db, Queryable, Statement } from './db.js';
import { queuedTurnsSql, type QueuedTurn } from './collectTurns.js';
import type { ClaimedContext } from './readHistory.js';
import type { SessionRow } from './types.js';
import { liveLimitBytes } from './eventRows.js';
import { publishWakeup, wakeupSql } from './wakeups.js';

/** The attempt a claim started for a fresh burst (see `claimSession`). */
export interface ClaimStart {
  /** The sequence of its `turn_started`. */
  sequence: number;
  attempt: number;
  turn_ids: string[];
  /** The agent revision the burst runs with, recorded on its turns (null: none stored). */
  agent_revision: number | null;
  /**
   * What the burst's start reads (`readHistory`), read with the claim itself when the claim
   * was an admission's and saw the session as the burst starts; absent otherwise
   * (`claimedContext` says whether it serves).
   */
  context?: ClaimedContext;
}

/** A claimed session, with the queued turns its first burst will answer. */
export type ClaimedSession = SessionRow & {
  queued: QueuedTurn[];
  /** Set when the claim also started the first burst's attempt. */
  started: ClaimStart | null;
  wakeup: string | null;
};

/**
 * The claim as SQL, its candidates chosen by `which` (a condition on `sessions`, then any
 * order and limit): claimable sessions, up to the free capacity, or one named session.
 */
const claimSql = (which: string) => `
    with candidate as (
      select session_id, tenant, agent, last_sequence, input_cursor, claim_count,
             burst is null and cancel_command_id is null and not partial_output as fresh
        from sessions
       where input_count > input_cursor
         and state not in ('parked', 'input_required')
         and (lease_expires_at is null or lease_expires_at < now())
         and ${which}
       for update skip locked
    ), plan as (
      select c.session_id, q.queued, row_number() over () as n,
             ($5::integer is not null and c.fresh and c.claim_count < $5
              -- The turns were read in this statement's snapshot; the lock may have found a
              -- later version of the row: start only if nothing was journaled between.
              and c.last_sequence = (select s.last_sequence from sessions s
                                      where s.session_id = c.session_id)
              and json_array_length(q.queued) > 0
              and not exists (select 1 from json_array_elements(q.queued) t
                               where t->>'agent_revision' is not null)) as fused,
             (select d.revision from definitions d
               where d.kind = 'agent' and d.tenant in (c.tenant, '') and d.name = c.agent
               order by d.tenant desc limit 1) as revision
        from candidate c, lateral (select (${queuedTurnsSql('c', '$4')}) as queued) q
    ), claimed as (
      update sessions s
         set lease_token = ($1::text[])[p.n],
             lease_owner = $2,
             lease_expires_at = now() + $3::integer * interval '1 millisecond',
             claim_count = s.claim_count + 1,
             state = 'running',
             last_sequence = s.last_sequence + case when p.fused then 1 else 0 end,
             attempt = case when p.fused then s.attempt + 1 else s.attempt end,
             current_turn_id = case when p.fused then p.queued->0->>'turn_id' else s.current_turn_id end,
             updated_at = case when p.fused then now() else s.updated_at end
        from plan p
       where s.session_id = p.session_id
       returning s.*, p.queued,
                 case when p.fused then jsonb_build_object(
                   'attempt', s.attempt,
                   'turn_ids', (select jsonb_agg(t->>'turn_id' order by (t->>'position')::bigint)
                                  from json_array_elements(p.queued) t),
                   'agent', s.agent,
                   'agent_revision', p.revision) end as payload
    ), inserted as (
      -- As storedEventsJson stores it: a burst of one turn leaves out its turn_ids.
      insert into events (session_id, sequence, type, turn_id, payload)
      select c.session_id, c.last_sequence, 'turn_started', c.current_turn_id,
             case when c.payload->'turn_ids' = jsonb_build_array(c.current_turn_id)
                  then c.payload - 'turn_ids' else c.payload end
        from claimed c where c.payload is not null
    ), started as (
      update turns t set state = 'running', agent_revision = (c.payload->>'agent_revision')::bigint
        from claimed c
       where c.payload is not null and t.session_id = c.session_id
         and t.position > c.input_cursor and t.position <= (c.queued->-1->>'position')::bigint
         and t.state in ('queued', 'running')
    ), live as (
      select c.*, jsonb_build_array(jsonb_build_object(
               'type', 'turn_started', 'turn_id', c.current_turn_id, 'data', c.payload))::text as events
        from claimed c
    )
    select l.*,
           case when l.payload is not null then jsonb_build_object(
             'sequence', l.last_sequence, 'attempt', l.attempt,
             'turn_ids', l.payload->'turn_ids', 'agent_revision', l.payload->'agent_revision') end
             as started,
           case when l.payload is not null then ${wakeupSql(
             "'events'",
             'l.session_id',
             'l.last_sequence',
             `case when octet_length(l.events) <= ${liveLimitBytes} then l.events end`,
           )} end as wakeup
      from live l`;

const claimStatement: Statement = {
  name: 'claim_session',
  text: claimSql('true order by lease_expires_at nulls first limit $6'),
};

const claimAdmittedStatement: Statement = {
  name: 'claim_admitted',
  text: claimSql('session_id = $6'),
};

/**
 * Claims up to one session per token that has queued turns and no live lease: writes the
 * session's fresh token and expiry in one short statement, and reads the turns to answer
 * in the same round trip. SKIP LOCKED means concurrent claimers never block each other; an
 * expired lease is claimable, which makes this query the recovery sweep for dead workers
 * too. Uses the `sessions_claimable` partial index.
 *
 * With `start`, the same statement also starts each first burst's attempt when it is a
 * fresh one — no saved burst, no cancel pending, no partial output, under the parking
 * limit, no turn with a recorded agent revision — as `startAttempt` would: `turn_started`
 * journaled with the agent's current stored revision, the turns running with it. One
 * write (and one WAL flush) fewer per turn; the worker then reads only the history
 * (readHistory). Otherwise the burst is started by `startAttempt` as before.
 */
export async function claimSessions(
  db: Queryable & Pick<Db, 'notifyLocally'>,
  claim: { tokens: string[]; owner: string; ttlMs: number; maxTurns: number },
  start?: { parkAfterAttempts: number },
): Promise<ClaimedSession[]> {
  const claimed = await db.query<ClaimedSession & { payload?: unknown; events?: unknown }>(
    claimStatement,
    [
      claim.tokens,
      claim.owner,
      claim.ttlMs,
      claim.maxTurns,
      start?.parkAfterAttempts ?? null,
      claim.tokens.length,
    ],
  );
  return claimed.rows.map(({ payload: _payload, events: _events, ...session }) => {
    publishWakeup(db, session.wakeup);
    return session;
  });
}

/**
 * Claims one named session under `token`, as `claimSessions` would claim it, inside the
 * transaction that admitted a turn to it and holds its row (admitTurn's general path, for a
 * worker of the admitting process). The wake-up is returned unsent, with the session:
 * the caller publishes it once the transaction has committed. Null: not claimable.
 */
export async function claimAdmitted(
  tx: Queryable,
  sessionId: string,
  claim: {
    token: string;
    owner: string;
    ttlMs: number;
    maxTurns: number;
    parkAfterAttempts: number;
  },
): Promise<ClaimedSession | null> {
  const claimed = await tx.query<ClaimedSession & { payload?: unknown; events?: unknown }>(
    claimAdmittedStatement,
    [[claim.token], claim.owner, claim.ttlMs, claim.maxTurns, claim.parkAfterAttempts, sessionId],
  );
  const row = claimed.rows[0];
  if (!row) return null;
  const { payload: _payload, events: _events, ...session } = row;
  return session;
}

/** Claims one session (see `claimSessions`) under `token`. */
export async function claimSession(
  db: Queryable & Pick<Db, 'notifyLocally'>,
  claim: { token: string; owner: string; ttlMs: number; maxTurns: number },
  start?: { parkAfterAttempts: number },
): Promise<ClaimedSession | null> {
  const { token, ...rest } = claim;
  return (await claimSessions(db, { tokens: [token], ...rest }, start))[0] ?? null;
}
