import { createHash } from 'node:crypto';
import { ParleyError } from '../errors.js';
import { newMessageId, newSessionId } from '../ids.js';
import { titleFrom } from './sessionTitle.js';
import { isUniqueViolation, type Db, type Queryable } from './db.js';
import { findAdmittedTurn, replayAdmission } from './admissionReplay.js';
import { createSession } from './createSession.js';
import {
  checkAgentRevision,
  checkAttachments,
  lockOption,
  storeImages,
} from './admissionChecks.js';
import { agentMismatch, messageEvent, type Admission, type AdmitTurnInput } from './admission.js';
import { admitToSession } from './admitToSession.js';
import { journalEvents } from './appendEvents.js';
import { claimAdmitted } from './claimSession.js';
import { expirePendingRequests } from './expireRequests.js';
import type { SessionRow } from './types.js';
import { viewerParams, visibleSql, type Viewer } from './visibility.js';
import { notifyWakeup, publishWakeup } from './wakeups.js';

export type { Admission, AdmitTurnInput, SessionHandoff, SessionSlot } from './admission.js';

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
