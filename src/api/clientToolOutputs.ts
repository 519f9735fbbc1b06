import type { Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { findClientToolCall } from '../store/findClientToolCall.js';
import type { ApiDeps } from './deps.js';
import { answerForPrincipal } from './inputs.js';

/** What a client says of a call of its own tool: its output, or why it did not run it. */
export interface ClientToolOutput {
  callId: string;
  output: unknown;
  /** Set: the client did not run it, and says why. */
  error?: string | undefined;
}

/**
 * Answers the calls of a client's tools with what the client sent (an AG-UI `tool`
 * message, an OpenAI `function_call_output`), as the principal would through Parley's
 * inbox: only the user whose turn declared the tool may. The turn they belong to goes on;
 * `from` is the journal sequence to stream that from. A call already answered with the
 * same output (a retried request) answers again from where it was asked; with another,
 * `409 stale_input`. An unknown call id is `404 input_not_found`, nothing answered.
 */
export async function answerClientToolOutputs(
  deps: ApiDeps,
  principal: Principal,
  sessionId: string,
  outputs: readonly ClientToolOutput[],
  field: string,
): Promise<{ turnId: string; from: number }> {
  let turnId: string | null = null;
  let from = Number.MAX_SAFE_INTEGER;
  for (const given of outputs) {
    const call = await findClientToolCall(deps.db, principal.tenant, { sessionId }, given.callId);
    if (!call) {
      throw new ParleyError('input_not_found', `${field}: no call ${given.callId.slice(0, 80)}`, {
        field,
      });
    }
    if (turnId !== null && call.turn_id !== turnId) {
      throw new ParleyError('invalid_request', `${field}: the calls belong to different turns`, {
        field,
      });
    }
    turnId = call.turn_id;
    const response = given.error === undefined ? { output: given.output } : { reason: given.error };
    if (call.state !== 'pending' && sameAnswer(call.response, response)) {
      from = Math.min(from, call.expected_sequence);
      continue;
    }
    const answered = await answerForPrincipal(deps, principal, {
      sessionId,
      requestId: call.request_id,
      expectedSequence: call.expected_sequence,
      approved: given.error === undefined,
      response,
    });
    from = Math.min(from, answered.sequence - 1);
  }
  if (turnId === null) throw new ParleyError('invalid_request', `${field}: no output`, { field });
  return { turnId, from };
}

function sameAnswer(stored: Record<string, unknown> | null, given: Record<string, unknown>) {
  return JSON.stringify(stored) === JSON.stringify(given);
}

/**
 * A stateless client's outputs of its own tools (Chat Completions' trailing `tool`
 * messages, which name no session): the calls are found by their ids among those the
 * principal's clients were asked to run, then answered as above.
 */
export async function answerUserToolOutputs(
  deps: ApiDeps,
  principal: Principal,
  outputs: readonly ClientToolOutput[],
  field: string,
): Promise<{ turnId: string; sessionId: string; from: number }> {
  const first = outputs[0];
  const call =
    first &&
    (await findClientToolCall(deps.db, principal.tenant, { user: principal.user }, first.callId));
  if (!call) {
    throw new ParleyError('input_not_found', `${field}: no call of that id`, { field });
  }
  const answered = await answerClientToolOutputs(deps, principal, call.session_id, outputs, field);
  return { turnId: answered.turnId, sessionId: call.session_id, from: answered.from };
}
