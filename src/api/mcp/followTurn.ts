import type { Principal } from '../../config/types.js';
import { isParleyError } from '../../errors.js';
import type { InputRequiredEvent } from '../../protocol/events.js';
import { findInputRequest } from '../../store/findInputRequest.js';
import type { ApiDeps } from '../deps.js';
import type { JournalFeed } from '../feed.js';
import { answerForPrincipal } from '../inputs.js';
import { JournalFollower } from '../journalFollower.js';
import { linkedSignal } from '../../linkedSignal.js';
import { TurnFold, type ProgressStep } from './turnFold.js';

/** A person's answer as an elicitation brings it back (null: dismissed, nothing answered). */
export type Elicited = { approved: boolean; response: Record<string, unknown> | null } | null;

/** Asks the person about a request through the MCP client (server.ts, elicitation.ts). */
export type Elicit = (request: InputRequiredEvent, signal: AbortSignal) => Promise<Elicited>;

/** What following a turn reads and whom it asks (a `tools/call`, a task's `tasks/result`). */
export interface FollowIo {
  deps: ApiDeps;
  feed: JournalFeed;
  principal: Principal;
  /** Ends the following: the fold answers the turn as it stands. */
  signal: AbortSignal;
  /** Reports a step of the turn, else null. */
  progress: ((step: ProgressStep) => Promise<void>) | null;
  /** Asks the person through the client (it declared `elicitation`), else null. */
  elicit: Elicit | null;
}

/** The turn to follow: its session, its id, and the journal's sequence of its admission. */
export interface FollowedTurn {
  sessionId: string;
  turnId: string;
  sequence: number;
}

/**
 * What to do once the turn waits on a request nobody can be asked about here (no
 * elicitation, a kind no form answers, a form dismissed): `answer` the turn as it stands
 * (a `tools/call`), or `wait` for its end while the request is answered elsewhere (a
 * task's `tasks/result`).
 */
export type WhenUnasked = 'answer' | 'wait';

/** The kinds of request an elicitation form can answer: a yes/no approval, a question. */
const elicitable = new Set(['approval', 'question']);

/**
 * Follows a turn through its session's journal (from its admission) until it ends, the
 * signal aborts, or — with `answer` — it waits on a request nobody here can be asked
 * about. An approval or question is asked through the client's elicitation when it can,
 * and answered as the principal would in Parley's inbox (PROTOCOL.md §4). Everything it
 * reads is the journal's, so any process follows any turn; answers the fold as it stands.
 */
export async function followTurn(
  io: FollowIo,
  turn: FollowedTurn,
  whenUnasked: WhenUnasked,
): Promise<TurnFold> {
  const fold = new TurnFold(turn.turnId);
  const follower = new JournalFollower(io.deps.db, io.feed, turn.sessionId, turn.sequence);
  const stop = io.signal;
  /** The elicitation under way, if any, and the request it asks about. */
  let asking: Asking | null = null;
  /** Requests answered through the client: the turn is followed on. */
  const answered = new Set<string>();
  /** Requests the person dismissed, or may not answer: they wait in the inbox. */
  const leftToInbox = new Set<string>();
  try {
    for (;;) {
      const round = new AbortController();
      void asking?.outcome?.finally(() => round.abort());
      const linked = linkedSignal(stop, round.signal);
      // Everything already journaled first: a request answered since is not asked again.
      const took = await follower
        .take(linked.signal, async (event) => {
          const step = fold.apply(event);
          if (step && io.progress) await io.progress(step);
        })
        .finally(linked.dispose);
      if (fold.isEnded) return fold;
      // Nothing taken and nothing stopped it: the session is gone, its turns with it.
      if (!took && !linked.signal.aborted) return fold;
      if (asking) {
        if (!fold.waiting.has(asking.requestId)) {
          // Answered elsewhere (the inbox, another client): the form is moot.
          asking.controller.abort();
          asking = null;
        } else if (asking.answer !== undefined) {
          const answer = asking.answer;
          if (answer !== null && (await answerAsPrincipal(io, turn, asking.requestId, answer))) {
            answered.add(asking.requestId);
          } else {
            leftToInbox.add(asking.requestId);
          }
          asking = null;
        }
      }
      if (stop.aborted) return fold;
      if (asking) continue;
      const unanswered = [...fold.waiting.values()].filter(
        (each) => !answered.has(each.request_id),
      );
      const askable = unanswered.find(
        (each) => elicitable.has(each.kind) && !leftToInbox.has(each.request_id),
      );
      if (io.elicit && askable) {
        asking = ask(io.elicit, askable, stop);
      } else if (unanswered.length > 0 && whenUnasked === 'answer') {
        return fold;
      }
    }
  } finally {
    asking?.controller.abort();
    follower.close();
  }
}

/** An elicitation under way: `answer` is set once the client answered (null: dismissed). */
interface Asking {
  requestId: string;
  controller: AbortController;
  answer: Elicited | undefined;
  outcome?: Promise<void>;
}

/** Starts asking the person about `request`; the answer lands in the returned `Asking`. */
function ask(elicit: Elicit, request: InputRequiredEvent, stop: AbortSignal): Asking {
  const controller = new AbortController();
  const started: Asking = { requestId: request.request_id, controller, answer: undefined };
  const linked = linkedSignal(stop, controller.signal);
  started.outcome = elicit(request, linked.signal)
    .catch(() => null)
    .finally(linked.dispose)
    .then((answer) => {
      started.answer = answer;
    });
  return started;
}

/**
 * Answers the request as the principal would in Parley's inbox (the same rules: approver
 * roles, escalations). False when the principal may not: the request stays in the inbox.
 * A request someone else answered first (`stale_input`) counts as answered.
 */
async function answerAsPrincipal(
  io: FollowIo,
  turn: FollowedTurn,
  requestId: string,
  answer: NonNullable<Elicited>,
): Promise<boolean> {
  const { deps, principal } = io;
  const asked = await findInputRequest(deps.db, principal.tenant, turn.sessionId, requestId);
  if (!asked) return true;
  try {
    await answerForPrincipal(deps, principal, {
      sessionId: turn.sessionId,
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
