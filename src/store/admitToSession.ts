import { newMessageId } from '../ids.js';
import { ParleyError } from '../errors.js';
import type { Db, Statement } from './db.js';
import { replayAdmission } from './admissionReplay.js';
import { agentMismatch, messageEvent, type Admission, type AdmitTurnInput } from './admission.js';
import type { ClaimedSession } from './claimSession.js';
import { liveEvents, liveLimitBytes } from './eventRows.js';
import { attemptContextSql, type AttemptContext } from './readHistory.js';
import type { SessionRow } from './types.js';
import { viewerParams, visibleSql } from './visibility.js';
import { publishWakeup, wakeupSql } from './wakeups.js';

/** Whether the posting user's message triggers a turn of the session's agent (`$8`). */
const triggersSql = `coalesce(($8::jsonb ->> s.agent)::boolean, true)`;

/**
 * Whether the admission also claims the session for the admitting process (`$15`, a fresh
 * lease token, given when that process's worker has a free slot): a turn is due, none is
 * queued or running before it, no live lease, and the burst would be a fresh one under the
 * parking limit (`$18`) — what the claim loop's `claim_session` would claim and start.
 */
const claimsSql = `($15::text is not null and ${triggersSql} and s.state = 'idle'
         and s.input_count = s.input_cursor
         and (s.lease_expires_at is null or s.lease_expires_at < now())
         and s.burst is null and s.cancel_command_id is null and not s.partial_output
         and s.claim_count < $18::integer)`;

/**
 * What the claimed burst's start reads (`readHistory`: `$19` limit, `$20` byte bound),
 * read here for its worker. Only when the statement's snapshot saw the session as the
 * claim left it, one sequence before the message: a commit that the update waited for
 * (and so saw) but the snapshot did not would be missing from the history. Otherwise null,
 * and the worker reads it.
 */
const contextSql = `case when b.claimed and b.message_sequence - 1 = (select f.last_sequence from found f)
      then (select to_json(c) from (select ${attemptContextSql({
        session: 'b.session_id',
        before: 'b.message_sequence',
        limit: '$19::integer',
        bytes: '$20::integer',
        tenant: 'b.tenant',
        authors: 'array[$5::text]',
      })}) c) end`;

const admitStatement: Statement = {
  name: 'admit_turn',
  text: `
    with found as (
      select s.session_id, s.agent, s.state, s.last_sequence from sessions s
       where s.tenant = $1 and s.session_id = $2 and ${visibleSql('s', 11)}
    ), known as (
      select t.session_id, encode(t.fingerprint, 'hex') as fingerprint, t.admitted_sequence,
             t.state, s.agent
        from turns t join sessions s on s.session_id = t.session_id
       where t.tenant = $1 and t.turn_id = $3
    ), bumped as (
      update sessions s
         set input_count = s.input_count + case when ${triggersSql} then 1 else 0 end,
             last_sequence = s.last_sequence + case when ${claimsSql} then 2 else 1 end,
             state = case when ${claimsSql} then 'running'
                          when ${triggersSql} and s.state = 'idle' then 'queued'
                          else s.state end,
             lease_token = case when ${claimsSql} then $15::text else s.lease_token end,
             lease_owner = case when ${claimsSql} then $16::text else s.lease_owner end,
             lease_expires_at = case when ${claimsSql}
                                     then now() + $17::integer * interval '1 millisecond'
                                     else s.lease_expires_at end,
             claim_count = s.claim_count + case when ${claimsSql} then 1 else 0 end,
             attempt = s.attempt + case when ${claimsSql} then 1 else 0 end,
             current_turn_id = case when ${claimsSql} then $3 else s.current_turn_id end,
             updated_at = now()
       where s.tenant = $1 and s.session_id = $2 and s.state not in ('input_required', 'closed')
         and ($4::text is null or s.agent = $4) and ${visibleSql('s', 11)}
         and not exists (select 1 from known)
       returning s.*, ${triggersSql} as triggers,
                 -- The token is fresh: on the row only when this statement claimed it.
                 coalesce(s.lease_token = $15::text, false) as claimed
    ), bump as (
      select b.*, b.last_sequence - b.claimed::integer as message_sequence,
             case when b.claimed then
               (select d.revision from definitions d
                 where d.kind = 'agent' and d.tenant in (b.tenant, '') and d.name = b.agent
                 order by d.tenant desc limit 1) end as revision
        from bumped b
    ), turn as (
      insert into turns (tenant, turn_id, session_id, position, state, fingerprint,
                         admitted_sequence, agent_revision)
      select b.tenant, $3, b.session_id, case when b.triggers then b.input_count end,
             case when b.claimed then 'running' when b.triggers then 'queued' else 'stored' end,
             decode($6, 'hex'), b.message_sequence, b.revision
        from bump b
    ), message as (
      insert into messages (message_id, tenant, session_id, turn_id, role, author, content, sequence)
      select $7, b.tenant, b.session_id, $3, 'user', $5, $9, b.message_sequence from bump b
    ), event as (
      insert into events (session_id, sequence, type, turn_id, payload, message_offset)
      select b.session_id, b.message_sequence, 'message', $3, '{}'::jsonb, 0 from bump b
      union all
      -- As claim_session journals it: a burst of one turn leaves out its turn_ids.
      select b.session_id, b.last_sequence, 'turn_started', $3,
             jsonb_build_object('attempt', b.attempt, 'agent', b.agent,
                                'agent_revision', b.revision), null
        from bump b where b.claimed
    ), woken as (
      select b.message_sequence, b.triggers, b.claimed, b.revision,
             ${wakeupSql(
               "case when b.claimed then 'events' when b.triggers then 'input' else 'events' end",
               'b.session_id',
               'b.last_sequence',
               `case when not b.claimed then $10::text else (
                  select case when octet_length(l.events) <= ${liveLimitBytes} then l.events end
                    from (select left($10::text, -1) || ',' || json_build_object(
                                   'type', 'turn_started', 'turn_id', $3::text,
                                   'data', json_build_object(
                                     'attempt', b.attempt, 'turn_ids', json_build_array($3::text),
                                     'agent', b.agent, 'agent_revision', b.revision))::text
                                 || ']' as events) l) end`,
             )} as wakeup,
             case when b.claimed then to_json(b) end as session,
             ${contextSql} as context
        from bump b
    )
    select w.message_sequence as last_sequence, w.triggers, w.wakeup, w.claimed, w.revision,
           w.session, w.context,
           k.session_id as known_session, k.fingerprint as known_fingerprint,
           k.admitted_sequence as known_sequence, k.state as known_state, k.agent as known_agent,
           f.session_id as found_session, f.agent as found_agent
      from (select 1) as one
      left join woken w on true
      left join known k on true
      left join found f on true`,
};

interface AdmitRow {
  last_sequence: number | null;
  triggers: boolean | null;
  /** The admission also claimed the session (`AdmitTurnInput.claim`). */
  claimed: boolean | null;
  /** The agent revision the claimed burst started with. */
  revision: number | null;
  /** What the claimed burst's start reads, when read here (`contextSql`). */
  context: AttemptContext | null;
  /** The claimed session's row, as JSON. */
  session:
    | (Omit<SessionRow, 'lease_expires_at' | 'created_at' | 'updated_at'> & {
        lease_expires_at: string;
        created_at: string;
        updated_at: string;
      })
    | null;
  /** The wake-up to publish (the admission applied). */
  wakeup: string | null;
  known_session: string | null;
  known_fingerprint: string | null;
  known_sequence: number | null;
  known_state: string | null;
  known_agent: string | null;
  found_session: string | null;
  found_agent: string | null;
}

/**
 * The one-statement admission to an existing session. Returns null when the general path
 * must decide (the session waits for a person, so the message may supersede a request;
 * or it is closed).
 */
export async function admitToSession(
  db: Db,
  input: AdmitTurnInput,
  sessionId: string,
  fingerprint: string,
): Promise<Admission | null> {
  const messageId = newMessageId();
  const result = await db.query<AdmitRow>(admitStatement, [
    input.tenant,
    sessionId,
    input.turnId,
    input.agent,
    input.author,
    fingerprint,
    messageId,
    JSON.stringify(Object.fromEntries(input.triggers)),
    input.message,
    liveEvents([messageEvent(input, messageId)]),
    ...viewerParams(input.viewer),
    input.claim?.token ?? null,
    input.claim?.owner ?? null,
    input.claim?.ttlMs ?? null,
    input.claim?.parkAfterAttempts ?? null,
    input.claim?.history.limit ?? null,
    input.claim?.history.bytes ?? null,
  ]);
  const row = result.rows[0] as AdmitRow;
  if (row.last_sequence !== null) {
    publishWakeup(db, row.wakeup);
    const admission: Admission = {
      session_id: sessionId,
      turn_id: input.turnId,
      sequence: row.last_sequence,
      state: row.triggers ? 'accepted' : 'stored',
    };
    if (row.claimed && row.session) {
      admission.claimed = claimedAtAdmission(input, messageId, row.last_sequence, row);
    }
    return admission;
  }
  if (row.known_session !== null) {
    return replayAdmission(input, fingerprint, {
      session_id: row.known_session,
      fingerprint: row.known_fingerprint as string,
      admitted_sequence: row.known_sequence as number,
      state: row.known_state as string,
      agent: row.known_agent as string,
    });
  }
  if (row.found_session === null) throw new ParleyError('session_not_found', 'no such session');
  if (input.agent !== null && input.agent !== row.found_agent) throw agentMismatch(row.found_agent);
  return null;
}

/** The session an admission claimed, as `claimSessions` returns one (its wake-up sent). */
function claimedAtAdmission(
  input: AdmitTurnInput,
  messageId: string,
  messageSequence: number,
  row: AdmitRow,
): ClaimedSession {
  const {
    triggers: _triggers,
    claimed: _claimed,
    message_sequence: _sequence,
    revision: _revision,
    ...session
  } = row.session as NonNullable<AdmitRow['session']> & Record<string, unknown>;
  return {
    ...session,
    lease_expires_at: new Date(session.lease_expires_at),
    created_at: new Date(session.created_at),
    updated_at: new Date(session.updated_at),
    queued: [
      {
        turn_id: input.turnId,
        position: session.input_count,
        admitted_sequence: messageSequence,
        message_id: messageId,
        author: input.author,
        content: input.message,
        option: null,
        attachments: null,
        agent_revision: null,
        instructions: null,
        client_tools: null,
      },
    ],
    started: {
      sequence: session.last_sequence,
      attempt: session.attempt,
      turn_ids: [input.turnId],
      agent_revision: row.revision,
      ...(row.context && input.claim
        ? {
            context: {
              ...row.context,
              read: { before: messageSequence, ...input.claim.history, authors: [input.author] },
            },
          }
        : {}),
    },
    wakeup: null,
  };
}
