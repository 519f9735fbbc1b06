import type { Visibility } from '../config/types.js';
import type { PendingInput, SessionState, TurnState } from '../protocol/rest.js';
import type { Queryable } from './db.js';
import type { SessionRow } from './types.js';

export interface SessionProjection {
  session_id: string;
  agent: string;
  title: string | null;
  /** Who created it; null for sessions made before sessions had owners. */
  owner: string | null;
  visibility: Visibility;
  /** Users who see a `room` besides its owner (kept, but unused, in other visibilities). */
  members: string[];
  /** The workspace it is grouped in (null: none); not who may see it. */
  workspace_id: string | null;
  state: SessionState;
  latest_sequence: number;
  earliest_sequence: number;
  current_turn: { turn_id: string; state: TurnState } | null;
  pending_input: PendingInput | null;
  queued_turns: number;
  usage: { input_tokens: number; output_tokens: number; cost_usd: number };
  /** The domain state (docs/governance.md, "Sessions with state"); null until first written. */
  data: Record<string, unknown> | null;
  result: unknown;
  created_at: string;
  updated_at: string;
}

type ProjectionRow = SessionRow & {
  head_turn_id: string | null;
  head_turn_state: TurnState | null;
  pending_input: PendingInput | null;
};

/**
 * The projection's current turn is the one being answered, else the oldest queued one.
 * The same select serves detail and list so both always agree. Who may see a session is
 * the caller's business (findVisibleSession, listSessions): this reads by id.
 */
export const projectionSelect = `
  select s.*, head.turn_id as head_turn_id, head.state as head_turn_state, pending.pending_input
    from sessions s
    left join lateral (
      select json_build_object('request_id', r.request_id, 'kind', r.kind,
                               'expected_sequence', r.expected_sequence, 'call_id', r.call_id,
                               'tool', r.tool, 'arguments', r.arguments,
                               'arguments_digest', r.arguments_digest, 'state', r.state,
                               'provider', r.provider, 'url', r.url,
                               'deadline_at', to_char(r.deadline_at at time zone 'UTC',
                                                      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                               'escalated_to', r.escalated_to
                              ) as pending_input
        from input_requests r
       where r.session_id = s.session_id and r.state = 'pending'
       order by r.expected_sequence
       limit 1
    ) pending on true
    left join lateral (
      select t.turn_id, t.state from turns t
       where t.session_id = s.session_id
         and (t.turn_id = s.current_turn_id or t.position > s.input_cursor)
       order by (t.turn_id = s.current_turn_id) desc, t.position
       limit 1
    ) head on true`;

export async function getSession(
  db: Queryable,
  tenant: string,
  sessionId: string,
): Promise<SessionProjection | null> {
  const found = await db.query<ProjectionRow>(
    `${projectionSelect} where s.tenant = $1 and s.session_id = $2`,
    [tenant, sessionId],
  );
  const row = found.rows[0];
  return row ? toProjection(row) : null;
}

export function toProjection(row: ProjectionRow): SessionProjection {
  return {
    session_id: row.session_id,
    agent: row.agent,
    title: row.title,
    owner: row.owner,
    visibility: row.visibility,
    members: row.members,
    workspace_id: row.workspace_id,
    state: effectiveState(row),
    latest_sequence: row.last_sequence,
    earliest_sequence: row.earliest_sequence,
    current_turn:
      row.head_turn_id === null
        ? null
        : { turn_id: row.head_turn_id, state: row.head_turn_state ?? 'queued' },
    pending_input: row.pending_input,
    queued_turns: row.input_count - row.input_cursor,
    usage: {
      input_tokens: row.input_tokens,
      output_tokens: row.output_tokens,
      cost_usd: row.cost_usd,
    },
    data: row.data,
    result: row.result,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * A `running` session whose lease expired has no live worker (it died): show it as
 * waiting for one, which is what it is, rather than as running.
 */
function effectiveState(row: SessionRow): SessionState {
  const leaseLive = row.lease_expires_at !== null && row.lease_expires_at.getTime() > Date.now();
  if (row.state !== 'running' || leaseLive) return row.state;
  return row.input_count > row.input_cursor ? 'queued' : 'idle';
}

/** Row-level read used by the runtime and operators (no tenant filter: by primary key). */
export async function getSessionRow(db: Queryable, sessionId: string): Promise<SessionRow | null> {
  const found = await db.query<SessionRow>('select * from sessions where session_id = $1', [
    sessionId,
  ]);
  return found.rows[0] ?? null;
}
