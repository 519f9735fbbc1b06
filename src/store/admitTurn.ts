import { createHash } from 'node:crypto';
import { ParleyError } from '../errors.js';
import { newMessageId, newSessionId } from '../ids.js';
import { isUniqueViolation, type Db, type Queryable } from './db.js';
import { createSession } from './createSession.js';
import { insertEvents } from './appendEvents.js';
import type { SessionRow } from './types.js';
import { notifyWakeup } from './wakeups.js';

export interface AdmitTurnInput {
  tenant: string;
  author: string;
  turnId: string;
  sessionId: string | null;
  /** The agent the request names, or null for the session's (or the default) agent. */
  agent: string | null;
  defaultAgent: string;
  /** Greeting of each known agent, for a session this admission creates. */
  greetings: Record<string, string | null>;
  message: string;
  option: { request_id: string; value: string } | null;
}

export interface Admission {
  session_id: string;
  turn_id: string;
  sequence: number;
  state: 'accepted';
}

/**
 * Admits one turn: the user message becomes durable (transcript row, journal event, turn
 * row) in one transaction, before any provider work. Idempotent by (tenant, turn_id): a
 * retry with the same input gets the same answer and writes nothing; a retry with other
 * input is a `turn_conflict`. Two concurrent first attempts race on the turns primary
 * key; the loser rolls back whole (including a session it created) and re-reads.
 */
export async function admitTurn(db: Db, input: AdmitTurnInput): Promise<Admission> {
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([input.message, input.option]))
    .digest('hex');
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction((tx) => admitOnce(tx, input, fingerprint));
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= 3) throw error;
    }
  }
}

async function admitOnce(
  tx: Queryable,
  input: AdmitTurnInput,
  fingerprint: string,
): Promise<Admission> {
  let session: SessionRow | null = null;
  if (input.sessionId !== null) {
    // Lock first: concurrent admissions to one session serialise here, so a retry that
    // waited sees the first attempt's turn row.
    session = await lockSession(tx, input.tenant, input.sessionId);
    if (!session) throw new ParleyError('session_not_found', 'no such session');
  }
  const existing = await findTurn(tx, input.tenant, input.turnId);
  if (existing) return replayAdmission(input, fingerprint, existing);

  if (session) {
    if (input.agent !== null && input.agent !== session.agent) {
      throw new ParleyError('agent_mismatch', `this session belongs to agent "${session.agent}"`, {
        agent: session.agent,
      });
    }
  } else {
    const agent = input.agent ?? input.defaultAgent;
    session = await createSession(tx, {
      tenant: input.tenant,
      sessionId: newSessionId(),
      agent,
      title: null,
      greeting: input.greetings[agent] ?? null,
    });
  }

  const bumped = await tx.query<{ input_count: number; last_sequence: number }>(
    `update sessions
        set input_count = input_count + 1,
            last_sequence = last_sequence + 1,
            state = case when state = 'idle' then 'queued' else state end,
            updated_at = now()
      where session_id = $1
      returning input_count, last_sequence`,
    [session.session_id],
  );
  const { input_count: position, last_sequence: sequence } = bumped.rows[0] as {
    input_count: number;
    last_sequence: number;
  };
  const messageId = newMessageId();
  await tx.query(
    `insert into turns (tenant, turn_id, session_id, position, fingerprint, admitted_sequence, message_id)
     values ($1, $2, $3, $4, $5, $6, $7)`,
    [input.tenant, input.turnId, session.session_id, position, fingerprint, sequence, messageId],
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
  const message: Record<string, unknown> = {
    id: messageId,
    role: 'user',
    author: input.author,
    content: input.message,
  };
  if (input.option) message.option = input.option;
  await insertEvents(tx, input.tenant, session.session_id, sequence - 1, [
    { type: 'message', turn_id: input.turnId, payload: { message } },
  ]);
  await notifyWakeup(tx, { kind: 'input', sessionId: session.session_id, sequence });
  return { session_id: session.session_id, turn_id: input.turnId, sequence, state: 'accepted' };
}

interface TurnRow {
  session_id: string;
  fingerprint: string;
  admitted_sequence: number;
  agent: string;
}

async function findTurn(tx: Queryable, tenant: string, turnId: string): Promise<TurnRow | null> {
  const found = await tx.query<TurnRow>(
    `select t.session_id, t.fingerprint, t.admitted_sequence, s.agent
       from turns t join sessions s on s.session_id = t.session_id
      where t.tenant = $1 and t.turn_id = $2`,
    [tenant, turnId],
  );
  return found.rows[0] ?? null;
}

async function lockSession(
  tx: Queryable,
  tenant: string,
  sessionId: string,
): Promise<SessionRow | null> {
  const found = await tx.query<SessionRow>(
    'select * from sessions where tenant = $1 and session_id = $2 for update',
    [tenant, sessionId],
  );
  return found.rows[0] ?? null;
}

function replayAdmission(input: AdmitTurnInput, fingerprint: string, existing: TurnRow): Admission {
  const sameSession = input.sessionId === null || input.sessionId === existing.session_id;
  const sameAgent = input.agent === null || input.agent === existing.agent;
  if (!sameSession || !sameAgent || existing.fingerprint !== fingerprint) {
    throw new ParleyError('turn_conflict', 'this turn_id was already used for a different input');
  }
  return {
    session_id: existing.session_id,
    turn_id: input.turnId,
    sequence: existing.admitted_sequence,
    state: 'accepted',
  };
}
