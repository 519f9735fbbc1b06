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
  /** The poster's roles, and each agent's trigger_roles (null = every role triggers). */
  roles: string[];
  triggerRoles: Record<string, string[] | null>;
  /** Each agent's `pending_input`: may a new message supersede a waiting approval? */
  pendingInput: Record<string, 'supersede' | 'queue'>;
}

export interface Admission {
  session_id: string;
  turn_id: string;
  sequence: number;
  /** `stored`: journaled and in the transcript, but no turn runs (no trigger role). */
  state: 'accepted' | 'stored';
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

  if (input.option && !session) {
    // Checked after the replay above: a retry of a known turn is answered as such.
    throw new ParleyError(
      'invalid_request',
      'option: needs the session_id the options were offered in',
      {
        field: 'session_id',
      },
    );
  }
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

  const triggers = mayTrigger(input.roles, input.triggerRoles[session.agent] ?? null);
  if (input.option) await lockOption(tx, input, session.session_id);
  // A stored post takes a sequence but no input position: nothing will answer it.
  const bumped = await tx.query<{ input_count: number; last_sequence: number }>(
    `update sessions
        set input_count = input_count + $2,
            last_sequence = last_sequence + 1,
            state = case
                      when $2 = 1 and state = 'idle' then 'queued'
                      when $2 = 1 and state = 'input_required' and $3 then 'queued'
                      else state
                    end,
            updated_at = now()
      where session_id = $1
      returning input_count, last_sequence`,
    [
      session.session_id,
      triggers ? 1 : 0,
      (input.pendingInput[session.agent] ?? 'supersede') === 'supersede',
    ],
  );
  const { input_count: count, last_sequence: sequence } = bumped.rows[0] as {
    input_count: number;
    last_sequence: number;
  };
  const messageId = newMessageId();
  await tx.query(
    `insert into turns (tenant, turn_id, session_id, position, state, fingerprint, admitted_sequence,
                        message_id, option)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      input.tenant,
      input.turnId,
      session.session_id,
      triggers ? count : null,
      triggers ? 'queued' : 'stored',
      fingerprint,
      sequence,
      messageId,
      input.option === null ? null : JSON.stringify(input.option),
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
  await notifyWakeup(tx, {
    kind: triggers ? 'input' : 'events',
    sessionId: session.session_id,
    sequence,
  });
  return {
    session_id: session.session_id,
    turn_id: input.turnId,
    sequence,
    state: triggers ? 'accepted' : 'stored',
  };
}

function mayTrigger(roles: string[], triggerRoles: string[] | null): boolean {
  if (triggerRoles === null || roles.includes('*')) return true;
  return roles.some((role) => triggerRoles.includes(role));
}

/**
 * Applies a pressed option: the offer must exist in this session, the value must be one
 * of its choices, and the offer must not be locked yet. The first press locks it.
 */
async function lockOption(tx: Queryable, input: AdmitTurnInput, sessionId: string): Promise<void> {
  const option = input.option as { request_id: string; value: string };
  const offer = (
    await tx.query<{ choices: string[]; locked: boolean }>(
      `select choices, locked_at is not null as locked from option_offers
        where tenant = $1 and session_id = $2 and request_id = $3 for update`,
      [input.tenant, sessionId, option.request_id],
    )
  ).rows[0];
  if (!offer) throw new ParleyError('option_not_found', 'no such option request in this session');
  if (offer.locked)
    throw new ParleyError('option_locked', 'an option was already chosen for this request');
  if (!offer.choices.includes(option.value)) {
    throw new ParleyError('invalid_option', 'option.value: not one of the offered choices', {
      choices: offer.choices,
    });
  }
  await tx.query(
    `update option_offers set chosen_value = $2, chosen_turn_id = $3, locked_at = now()
      where request_id = $1`,
    [option.request_id, option.value, input.turnId],
  );
}

interface TurnRow {
  session_id: string;
  fingerprint: string;
  admitted_sequence: number;
  agent: string;
  state: string;
}

async function findTurn(tx: Queryable, tenant: string, turnId: string): Promise<TurnRow | null> {
  const found = await tx.query<TurnRow>(
    `select t.session_id, t.fingerprint, t.admitted_sequence, t.state, s.agent
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
    state: existing.state === 'stored' ? 'stored' : 'accepted',
  };
}
