import { createHash } from 'node:crypto';
import type { Visibility } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { newMessageId, newSessionId } from '../ids.js';
import { titleFrom } from './sessionTitle.js';
import { newEvent, type NewEvent } from '../protocol/events.js';
import { isUniqueViolation, type Db, type Queryable, type Statement } from './db.js';
import { findAdmittedTurn, replayAdmission } from './admissionReplay.js';
import { createSession } from './createSession.js';
import type { ClientTool } from './types.js';
import {
  checkAgentRevision,
  checkAttachments,
  lockOption,
  storeImages,
} from './admissionChecks.js';
import { journalEvents } from './appendEvents.js';
import { liveEvents, liveLimitBytes } from './eventRows.js';
import { claimAdmitted, type ClaimedSession } from './claimSession.js';
import { expirePendingRequests } from './expireRequests.js';
import type { SessionRow } from './types.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';
import { notifyWakeup, publishWakeup, wakeupSql } from './wakeups.js';

export interface AdmitTurnInput {
  tenant: string;
  /** Who posts: the owner of a session this admission creates. */
  author: string;
  /** The session must be one the poster may see (else it is as missing as a missing one). */
  viewer: Viewer;
  turnId: string;
  sessionId: string | null;
  /** The agent the request names, or null for the session's (or the default) agent. */
  agent: string | null;
  defaultAgent: string;
  /** Greeting of each known agent, for a session this admission creates. */
  greetings: ReadonlyMap<string, string | null>;
  /** Each agent's `visibility`, for a session this admission creates. */
  visibilities: ReadonlyMap<string, Visibility>;
  message: string;
  option: { request_id: string; value: string } | null;
  /** Images of this session (`attachments` rows) the turn carries, by id. */
  attachments: string[];
  /** Whether the poster triggers a turn of each agent (its roles against trigger_roles). */
  triggers: ReadonlyMap<string, boolean>;
  /** Each agent's `pending_input`: may a new message supersede a waiting request? */
  pendingInput: ReadonlyMap<string, 'supersede' | 'queue'>;
  /**
   * The agent revision the client expects (`agent_revision`): it must be the agent's
   * current one, is part of the fingerprint, and the turn runs with it.
   */
  agentRevision?: number | null;
  /**
   * Images the request carries inline (already checked: type, bytes, size), stored as
   * attachments of the turn's session in the admission's transaction and carried by the
   * turn after `attachments`. Their digests are part of the fingerprint; a replay stores
   * nothing again.
   */
  images?: { mediaType: string; data: Uint8Array }[];
  /**
   * Whether each of `images` also lands in its author's photo library: a chat platform's
   * photo, sent once; not the images of the OpenAI-compatible and AG-UI APIs, whose
   * clients send them again with every request.
   */
  imagesInLibrary?: boolean;
  /** Instructions for this turn, appended to the agent's (part of the fingerprint). */
  instructions?: string | null;
  /** The client's own string pairs, kept with the turn (part of the fingerprint). */
  metadata?: Record<string, string> | null;
  /** Tools the client declares, which it runs itself (checked; part of the fingerprint). */
  clientTools?: ClientTool[] | null;
  /**
   * Runs first in the admission's transaction, before the session is locked; throwing
   * admits nothing. A writer that may admit only while it holds a lease checks it here, so
   * that one whose lease was taken (it stalled, another ended the work) cannot admit late.
   */
  guard?: (tx: Queryable) => Promise<void>;
  /**
   * A lease to claim the session under, for a worker of the admitting process with a free
   * slot: when the turn is the session's only work and no one holds it, the admission
   * claims the session and starts the turn's attempt as the claim loop would
   * (`claim_session`), in its own statement, and returns the claimed session for that
   * worker to answer (`Admission.claimed`). Otherwise the admission is as without it.
   */
  claim?: {
    token: string;
    owner: string;
    ttlMs: number;
    parkAfterAttempts: number;
    /** The most turns of the first burst (a new message may join others queued before). */
    maxTurns: number;
  };
}

/**
 * A slot of a worker in the admitting process, for the session an admission claims
 * (`AdmitTurnInput.claim`): the lease to claim it under, then `adopt` with the claimed
 * session or `release` when the admission did not claim it. The API and the worker meet
 * here in one process, through this interface only (the worker implements it).
 */
export interface SessionSlot {
  claim: NonNullable<AdmitTurnInput['claim']>;
  adopt(session: ClaimedSession): void;
  release(): void;
}

/** Where an admission finds a worker of its own process with a free slot. */
export interface SessionHandoff {
  reserveSession(): SessionSlot | null;
}

export interface Admission {
  session_id: string;
  turn_id: string;
  sequence: number;
  /** `stored`: journaled and in the transcript, but no turn runs (no trigger role). */
  state: 'accepted' | 'stored';
  /** The session, claimed under `AdmitTurnInput.claim` with the turn's attempt started. */
  claimed?: ClaimedSession;
}

/**
 * Admits one turn: the user message becomes durable (transcript row, journal event, turn
 * row) in one transaction, before any provider work. Idempotent by (tenant, turn_id): a
 * retry with the same input gets the same answer and writes nothing; a retry with other
 * input is a `turn_conflict`. Two concurrent first attempts race on the turns primary
 * key; the loser rolls back whole (including a session it created) and re-reads.
 *
 * The common case (a message to an existing session that waits for nobody) is one
 * statement; a new session, a pressed option, a session waiting for a person or a closed
 * one (refused, `session_closed`) take the general path.
 */
export async function admitTurn(db: Db, input: AdmitTurnInput): Promise<Admission> {
  const agentRevision = input.agentRevision ?? null;
  // What a retry must repeat; parts a request may leave out count only when given, so a
  // fingerprint of a request without them stays what it always was.
  const covered: unknown[] = [input.message, input.option];
  if (input.attachments.length > 0) covered.push(input.attachments);
  if (agentRevision !== null) covered.push({ agent_revision: agentRevision });
  const instructions = input.instructions ?? null;
  const metadata = input.metadata ?? null;
  const clientTools = input.clientTools?.length ? input.clientTools : null;
  const images = input.images ?? [];
  if (images.length > 0) {
    covered.push({
      images: images.map((image) => [
        image.mediaType,
        createHash('sha256').update(image.data).digest('hex'),
      ]),
    });
  }
  if (instructions !== null) covered.push({ instructions });
  if (metadata !== null) covered.push({ metadata });
  if (clientTools !== null) covered.push({ client_tools: clientTools });
  // The first 16 bytes of the SHA-256 (hex): a retry of one turn_id is told apart from
  // other input, nothing more is asked of it.
  const fingerprint = createHash('sha256')
    .update(JSON.stringify(covered))
    .digest('hex')
    .slice(0, 32);
  for (let attempt = 0; ; attempt++) {
    try {
      if (
        input.sessionId !== null &&
        input.guard === undefined &&
        input.option === null &&
        input.attachments.length === 0 &&
        images.length === 0 &&
        agentRevision === null &&
        instructions === null &&
        metadata === null &&
        clientTools === null
      ) {
        const fast = await admitToSession(db, input, input.sessionId, fingerprint);
        if (fast) return fast;
      }
      const admission = await db.transaction((tx) => admitOnce(tx, input, fingerprint));
      // Committed: the claim's wake-up may go out now.
      publishWakeup(db, admission.claimed?.wakeup);
      return admission;
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= 3) throw error;
    }
  }
}

function messageEvent(
  input: AdmitTurnInput,
  messageId: string,
  attachments: string[] = [],
): NewEvent<'message'> {
  return newEvent('message', input.turnId, {
    message: {
      id: messageId,
      role: 'user',
      author: input.author,
      content: input.message,
      ...(input.option ? { option: input.option } : {}),
      ...(attachments.length > 0 ? { attachments } : {}),
    },
  });
}

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

const admitStatement: Statement = {
  name: 'admit_turn',
  text: `
    with found as (
      select s.session_id, s.agent, s.state from sessions s
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
             case when b.claimed then to_json(b) end as session
        from bump b
    )
    select w.message_sequence as last_sequence, w.triggers, w.wakeup, w.claimed, w.revision,
           w.session,
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
async function admitToSession(
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
    },
    wakeup: null,
  };
}

function agentMismatch(agent: string | null): ParleyError {
  return new ParleyError('agent_mismatch', `this session belongs to agent "${agent}"`, { agent });
}

/** The general path: one transaction that locks the session row first. */
async function admitOnce(
  tx: Queryable,
  input: AdmitTurnInput,
  fingerprint: string,
): Promise<Admission> {
  await input.guard?.(tx);
  let session: SessionRow | null = null;
  if (input.sessionId !== null) {
    // Lock first: concurrent admissions to one session serialise here, so a retry that
    // waited sees the first attempt's turn row.
    session = await lockSession(tx, input.tenant, input.sessionId, input.viewer);
    if (!session) throw new ParleyError('session_not_found', 'no such session');
  }
  const existing = await findAdmittedTurn(tx, input.tenant, input.turnId);
  if (existing) return replayAdmission(input, fingerprint, existing);

  if (input.option && !session) {
    // Checked after the replay above: a retry of a known turn is answered as such.
    throw new ParleyError(
      'invalid_request',
      'option: needs the session_id the options were offered in',
      { field: 'session_id' },
    );
  }
  if (session) {
    if (input.agent !== null && input.agent !== session.agent) throw agentMismatch(session.agent);
    // A completed session takes no more input (docs/governance.md, "Sessions with state").
    if (session.state === 'closed') {
      throw new ParleyError(
        'session_closed',
        'this session is completed and takes no more messages',
      );
    }
  } else {
    const agent = input.agent ?? input.defaultAgent;
    session = await createSession(tx, {
      tenant: input.tenant,
      sessionId: newSessionId(),
      agent,
      title: titleFrom(input.message),
      greeting: input.greetings.get(agent) ?? null,
      owner: input.author,
      visibility: input.visibilities.get(agent) ?? 'tenant',
    });
  }

  if (input.agentRevision != null) await checkAgentRevision(tx, input, session.agent);
  const triggers = input.triggers.get(session.agent) ?? true;
  if (input.option) await lockOption(tx, input, session.session_id);
  if (input.attachments.length > 0) await checkAttachments(tx, input, session.session_id);
  const attachments = [...input.attachments, ...(await storeImages(tx, input, session.session_id))];
  // A message that runs a turn while a request waits for a person supersedes it (agent
  // `pending_input: supersede`), decided here under the session lock: an answer that
  // committed first has left nothing pending (its call runs, this message is answered
  // after it); an answer after this one finds the request expired (409 stale_input).
  const supersede =
    triggers &&
    session.state === 'input_required' &&
    (input.pendingInput.get(session.agent) ?? 'supersede') === 'supersede';
  const expired = supersede
    ? await expirePendingRequests(tx, session.session_id, 'superseded')
    : [];
  // A stored post takes a sequence but no input position: nothing will answer it.
  const bumped = await tx.query<{ input_count: number; last_sequence: number }>(
    `update sessions
        set input_count = input_count + $2,
            state = case
                      when $2 = 1 and state = 'idle' then 'queued'
                      when $2 = 1 and state = 'input_required' and $3 then 'queued'
                      else state
                    end
      where session_id = $1
      returning input_count, last_sequence`,
    [session.session_id, triggers ? 1 : 0, supersede],
  );
  const { input_count: count, last_sequence: last } = bumped.rows[0] as {
    input_count: number;
    last_sequence: number;
  };
  const sequence = last + 1;
  const messageId = newMessageId();
  await tx.query(
    `insert into turns (tenant, turn_id, session_id, position, state, fingerprint, admitted_sequence,
                        option, attachments, agent_revision, instructions, metadata, client_tools)
     values ($1, $2, $3, $4, $5, decode($6, 'hex'), $7, $8, $9, $10, $11, $12, $13)`,
    [
      input.tenant,
      input.turnId,
      session.session_id,
      triggers ? count : null,
      triggers ? 'queued' : 'stored',
      fingerprint,
      sequence,
      input.option === null ? null : JSON.stringify(input.option),
      attachments.length === 0 ? null : JSON.stringify(attachments),
      input.agentRevision ?? null,
      input.instructions ?? null,
      input.metadata ? JSON.stringify(input.metadata) : null,
      input.clientTools?.length ? JSON.stringify(input.clientTools) : null,
    ],
  );
  await tx.query(
    `insert into messages (message_id, tenant, session_id, turn_id, role, author, content, sequence)
     values ($1, $2, $3, $4, 'user', $5, $6, $7)`,
    [
      messageId,
      input.tenant,
      session.session_id,
      input.turnId,
      input.author,
      input.message,
      sequence,
    ],
  );
  // A worker of this process with a free slot claims the session in this transaction, as
  // its claim loop would (the one-statement path does the same in its statement): then no
  // one else need be woken to claim it.
  const claiming = triggers && input.claim !== undefined;
  const journaled = await journalEvents(
    tx,
    session.session_id,
    [messageEvent(input, messageId, attachments), ...expired],
    triggers && !claiming ? 'input' : 'events',
  );
  const claimed =
    claiming && input.claim ? await claimAdmitted(tx, session.session_id, input.claim) : null;
  if (claiming && !claimed) {
    // Not claimable (another worker holds it, it is parked, …): the input wake-up after all.
    await notifyWakeup(tx, { kind: 'input', sessionId: session.session_id, sequence: journaled });
  }
  return {
    session_id: session.session_id,
    turn_id: input.turnId,
    sequence,
    state: triggers ? 'accepted' : 'stored',
    ...(claimed ? { claimed } : {}),
  };
}

async function lockSession(
  tx: Queryable,
  tenant: string,
  sessionId: string,
  viewer: Viewer,
): Promise<SessionRow | null> {
  const found = await tx.query<SessionRow>(
    `select * from sessions s
      where s.tenant = $1 and s.session_id = $2 and ${visibleSql('s', 3)}
      for update of s`,
    [tenant, sessionId, ...viewerParams(viewer)],
  );
  return found.rows[0] ?? null;
}
