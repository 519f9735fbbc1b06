import { cancelAsPrincipal } from '../adapterStreams.js';
import type { Principal } from '../../config/types.js';
import { isParleyError, ParleyError } from '../../errors.js';
import type { InputRequiredEvent } from '../../protocol/events.js';
import { findInputRequest } from '../../store/findInputRequest.js';
import type { Admission } from '../../store/admitTurn.js';
import { findVisibleSession } from '../../store/findVisibleSession.js';
import type { ApiDeps } from '../deps.js';
import type { JournalFeed } from '../feed.js';
import { answerForPrincipal } from '../inputs.js';
import { JournalFollower } from '../journalFollower.js';
import { viewerOf } from '../sessionAccess.js';
import { admitForPrincipal } from '../turns.js';
import { linkedSignal } from './linkedSignal.js';
import { TurnFold, type CallStatus, type ProgressStep } from './turnFold.js';

/** The `_meta` key whose value is the turn id (as OpenAI's `Idempotency-Key` header). */
export const idempotencyMetaKey = 'parley/idempotency_key';

/** What one `tools/call` asks: a message to an agent, in a new session or a given one. */
export interface TurnCall {
  agent: string;
  message: string;
  sessionId: string | null;
  turnId: string;
}

/** A person's answer as an elicitation brings it back (null: dismissed, nothing answered). */
export type Elicited = { approved: boolean; response: Record<string, unknown> | null } | null;

/** The I/O of one call, injected by the MCP server that runs it (server.ts). */
export interface CallIo {
  deps: ApiDeps;
  feed: JournalFeed;
  principal: Principal;
  /** Aborts when the client cancels the request or leaves. */
  signal: AbortSignal;
  /** The client cancelled this request (`notifications/cancelled`), rather than left. */
  cancelledByClient: () => boolean;
  /** Reports a step of the turn (the client sent a progressToken), else null. */
  progress: ((step: ProgressStep) => Promise<void>) | null;
  /** Asks the person through the client (it declared `elicitation`), else null. */
  elicit: ((request: InputRequiredEvent, signal: AbortSignal) => Promise<Elicited>) | null;
  /** How long the call follows the turn before answering it as it stands. */
  waitMs: number;
}

/** The tool's result, as `structuredContent` carries it. */
export interface CallOutcome {
  session_id: string;
  turn_id: string;
  status: CallStatus;
  reply: string;
  /** The request the turn waits on (status `input_required`), answered in Parley's inbox. */
  request_id?: string;
  /** Why the turn failed (status `failed`). */
  error?: { code: string; message: string };
}

/** The kinds of request an elicitation form can answer: a yes/no approval, a question. */
const elicitable = new Set(['approval', 'question']);

/**
 * Runs one tool call as a Parley turn: admits it (PROTOCOL.md §2, the same admission as
 * `POST /api/v1/chat/turns`), then follows the session's journal until the turn ends,
 * waits for a person the client cannot ask, or `waitMs` passes. An approval or question
 * is asked through the client's elicitation when it can, and answered as the principal
 * would in Parley's inbox. A client's cancel is Parley's durable cancel; a client that
 * leaves leaves the turn running.
 */
export async function callTurn(io: CallIo, call: TurnCall): Promise<CallOutcome> {
  const { deps, principal } = io;
  const admission = await admitCall(deps, principal, call);
  const sessionId = admission.session_id;
  const turnId = admission.turn_id;
  const fold = new TurnFold(turnId);
  const follower = new JournalFollower(deps.db, io.feed, sessionId, admission.sequence);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), io.waitMs);
  const stopping = linkedSignal(io.signal, deadline.signal);
  const stop = stopping.signal;
  /** The elicitation under way, if any, and the request it asks about. */
  let asking: Asking | null = null;
  /** Requests answered through the client: the call follows the turn on. */
  const answered = new Set<string>();
  /** A request the person dismissed, or may not answer: it waits in the inbox. */
  let leftToInbox: string | null = null;
  const outcome = (): CallOutcome => {
    const status = fold.status;
    const waitingOn = [...fold.waiting.keys()][0];
    return {
      session_id: sessionId,
      turn_id: turnId,
      status,
      reply: fold.reply,
      ...(status === 'input_required' && waitingOn ? { request_id: waitingOn } : {}),
      ...(fold.failure ? { error: fold.failure } : {}),
    };
  };
  try {
    for (;;) {
      const round = new AbortController();
      void asking?.outcome?.finally(() => round.abort());
      const linked = linkedSignal(stop, round.signal);
      // Everything already journaled first: a request answered since is not asked again.
      await follower
        .take(linked.signal, async (event) => {
          const step = fold.apply(event);
          if (step && io.progress) await io.progress(step);
        })
        .finally(linked.dispose);
      if (fold.isEnded) return outcome();
      if (asking) {
        if (!fold.waiting.has(asking.requestId)) {
          // Answered elsewhere (the inbox, another client): the form is moot.
          asking.controller.abort();
          asking = null;
        } else if (asking.answer !== undefined) {
          const answer = asking.answer;
          if (
            answer !== null &&
            (await answerAsPrincipal(io, sessionId, asking.requestId, answer))
          ) {
            answered.add(asking.requestId);
          } else {
            leftToInbox = asking.requestId;
          }
          asking = null;
        }
      }
      if (io.signal.aborted) {
        if (io.cancelledByClient()) await cancel(io, sessionId, turnId);
        return outcome();
      }
      if (deadline.signal.aborted) return outcome();
      const waiting = [...fold.waiting.values()].find((each) => !answered.has(each.request_id));
      if (waiting && !asking) {
        if (waiting.request_id === leftToInbox || !io.elicit || !elicitable.has(waiting.kind)) {
          return outcome();
        }
        const controller = new AbortController();
        const started: Asking = { requestId: waiting.request_id, controller, answer: undefined };
        const linked = linkedSignal(stop, controller.signal);
        started.outcome = io
          .elicit(waiting, linked.signal)
          .catch(() => null)
          .finally(linked.dispose)
          .then((answer) => {
            started.answer = answer;
          });
        asking = started;
      }
    }
  } finally {
    asking?.controller.abort();
    clearTimeout(timer);
    stopping.dispose();
    follower.close();
  }
}

/**
 * Admits the call's turn as the principal (PROTOCOL.md §2): in the session it names, if
 * the principal may see it, else in a new one. Idempotent by the turn id.
 */
export async function admitCall(
  deps: ApiDeps,
  principal: Principal,
  call: TurnCall,
): Promise<Admission> {
  if (call.sessionId !== null) {
    const visible = await findVisibleSession(
      deps.db,
      principal.tenant,
      call.sessionId,
      viewerOf(deps, principal),
    );
    if (!visible) {
      throw new ParleyError('session_not_found', 'no such session', { field: 'session_id' });
    }
  }
  return admitForPrincipal(deps, principal, {
    turnId: call.turnId,
    sessionId: call.sessionId,
    agent: call.agent,
    message: call.message,
  });
}

/** An elicitation under way: `answer` is set once the client answered (null: dismissed). */
interface Asking {
  requestId: string;
  controller: AbortController;
  answer: Elicited | undefined;
  outcome?: Promise<void>;
}

/**
 * Answers the request as the principal would in Parley's inbox (the same rules: approver
 * roles, escalations). False when the principal may not: the request stays in the inbox.
 * A request someone else answered first (`stale_input`) counts as answered.
 */
async function answerAsPrincipal(
  io: CallIo,
  sessionId: string,
  requestId: string,
  answer: NonNullable<Elicited>,
): Promise<boolean> {
  const asked = await findInputRequest(io.deps.db, io.principal.tenant, sessionId, requestId);
  if (!asked) return true;
  try {
    await answerForPrincipal(io.deps, io.principal, {
      sessionId,
      requestId,
      expectedSequence: asked.expected_sequence,
      approved: answer.approved,
      response: answer.response,
      argumentsDigest: asked.arguments_digest ?? undefined,
    });
    return true;
  } catch (error) {
    if (isParleyError(error) && error.code === 'stale_input') return true;
    if (isParleyError(error) && error.code === 'forbidden') return false;
    throw error;
  }
}

/** Parley's durable cancel, with a command id of the turn's own: a repeat is a duplicate. */
async function cancel(io: CallIo, sessionId: string, turnId: string): Promise<void> {
  await cancelAsPrincipal(io.deps.db, io.principal, { sessionId, turnId });
}
