import { cancelAsPrincipal } from '../adapterStreams.js';
import type { Principal } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import type { Admission } from '../../store/admitTurn.js';
import { findVisibleSession } from '../../store/findVisibleSession.js';
import type { ApiDeps } from '../deps.js';
import type { JournalFeed } from '../feed.js';
import { viewerOf } from '../sessionAccess.js';
import { admitForPrincipal } from '../turns.js';
import { followTurn, type Elicit } from './followTurn.js';
import { linkedSignal } from '../../linkedSignal.js';
import type { CallStatus, ProgressStep } from './turnFold.js';

/** The `_meta` key whose value is the turn id (as OpenAI's `Idempotency-Key` header). */
export const idempotencyMetaKey = 'parley/idempotency_key';

/** What one `tools/call` asks: a message to an agent, in a new session or a given one. */
export interface TurnCall {
  agent: string;
  message: string;
  sessionId: string | null;
  turnId: string;
}

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
  elicit: Elicit | null;
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

/**
 * Runs one tool call as a Parley turn: admits it (PROTOCOL.md §2, the same admission as
 * `POST /api/v1/chat/turns`), then follows it (followTurn.ts) until it ends, waits for a
 * person the client cannot ask, or `waitMs` passes; an approval or question is asked
 * through the client's elicitation when it can. A client's cancel is Parley's durable
 * cancel; a client that leaves leaves the turn running.
 */
export async function callTurn(io: CallIo, call: TurnCall): Promise<CallOutcome> {
  const { deps, principal } = io;
  const admission = await admitCall(deps, principal, call);
  const sessionId = admission.session_id;
  const turnId = admission.turn_id;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), io.waitMs);
  const stopping = linkedSignal(io.signal, deadline.signal);
  try {
    const fold = await followTurn(
      {
        deps,
        feed: io.feed,
        principal,
        signal: stopping.signal,
        progress: io.progress,
        elicit: io.elicit,
      },
      { sessionId, turnId, sequence: admission.sequence },
      'answer',
    );
    if (!fold.isEnded && io.signal.aborted && io.cancelledByClient()) {
      await cancel(io, sessionId, turnId);
    }
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
  } finally {
    clearTimeout(timer);
    stopping.dispose();
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

/** Parley's durable cancel, with a command id of the turn's own: a repeat is a duplicate. */
async function cancel(io: CallIo, sessionId: string, turnId: string): Promise<void> {
  await cancelAsPrincipal(io.deps.db, io.principal, { sessionId, turnId });
}
