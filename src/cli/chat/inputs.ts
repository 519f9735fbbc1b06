import {
  ParleyClientError,
  type InputRequiredEvent,
  type ParleyClient,
  type PendingInput,
} from '../../client/index.js';
import { describeError } from './errors.js';
import type { Screen } from './screen.js';

/** A pending question for the person at the keyboard (from the stream or the projection). */
export interface InputRequest {
  requestId: string;
  kind: string;
  sequence: number;
  /** An approval's digest of the arguments shown: the answer names it. */
  argumentsDigest?: string | undefined;
  describe: string;
}

/** What asking and answering need from the conversation. */
export interface InputContext {
  readonly client: ParleyClient;
  readonly url: string;
  readonly screen: Screen;
  readonly sessionId: string;
  input: InputRequest | null;
  becomeIdleIfDone(): void;
}

/** Put the request to the person at the keyboard; the next line typed answers it. */
export function askInput(context: InputContext, request: InputRequest): void {
  const { screen } = context;
  screen.endReplyLine();
  context.input = request;
  screen.mode = 'input';
  screen.status(request.describe);
  screen.showPrompt(
    request.kind === 'question'
      ? 'your answer: '
      : 'approve? y/n, optionally followed by a reason: ',
  );
}

/** Send the line typed as the answer to the pending request. */
export async function answerInput(context: InputContext, line: string): Promise<void> {
  const { screen } = context;
  const request = context.input;
  if (!request) return;
  let approved = true;
  let response: Record<string, unknown> | undefined;
  if (request.kind === 'question') {
    response = { answer: line.trim() };
  } else {
    const match = /^\s*(y|yes|n|no)\b[\s,:;-]*(.*)$/i.exec(line);
    if (!match) {
      screen.prompt();
      return;
    }
    approved = (match[1] ?? '').toLowerCase().startsWith('y');
    const reason = (match[2] ?? '').trim();
    if (reason !== '') response = { reason };
  }
  screen.mode = 'turn';
  try {
    await context.client.answerInput(context.sessionId, request.requestId, {
      expectedSequence: request.sequence,
      approved,
      response,
      argumentsDigest: request.argumentsDigest,
    });
    context.input = null;
    screen.status(approved ? 'approval sent' : 'rejection sent');
  } catch (error) {
    if (error instanceof ParleyClientError && (error.status === 409 || error.status === 404)) {
      // Answered elsewhere, or no longer pending: the stream shows what happened.
      context.input = null;
      screen.status(`not needed any more: ${describeError(error, context.url)}`);
      context.becomeIdleIfDone();
    } else {
      screen.status(`could not send the answer: ${describeError(error, context.url)}`);
      askInput(context, request);
    }
  }
}

export function fromEvent(event: InputRequiredEvent): InputRequest {
  const what =
    event.kind === 'approval'
      ? `approval needed: ${event.tool ?? 'a tool'} ${JSON.stringify(event.arguments ?? {})}`
      : event.kind === 'budget_extension'
        ? `the turn used up its budget${event.prompt ? `: ${event.prompt}` : ''}; extend it?`
        : event.kind === 'reconciliation'
          ? `a call was interrupted: ${event.tool ?? 'a tool'} ${JSON.stringify(event.arguments ?? {})}; did it take effect?`
          : event.kind === 'external_auth'
            ? `${event.tool ?? 'a tool'} needs access to ${event.provider ?? 'a third party'}: ${event.url ?? ''} (answer in the web app with the credential's reference)`
            : `the assistant asks: ${event.prompt ?? '(no question text)'}`;
  return {
    requestId: event.request_id,
    kind: event.kind,
    sequence: event.sequence,
    argumentsDigest: event.arguments_digest,
    describe: what,
  };
}

/** The request a projection still has pending (after a resync). */
export function fromPendingInput(pendingInput: PendingInput): InputRequest {
  return {
    requestId: pendingInput.request_id,
    kind: pendingInput.kind,
    sequence: pendingInput.expected_sequence,
    argumentsDigest: pendingInput.arguments_digest ?? undefined,
    describe: `${pendingInput.kind} needed${typeof pendingInput.prompt === 'string' ? `: ${pendingInput.prompt}` : ''}`,
  };
}
