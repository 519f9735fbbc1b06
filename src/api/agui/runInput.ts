import type { z } from 'zod';
import { ParleyError } from '../../errors.js';
import { contextLimitBytes, type resumeEntry, type runInput } from './contracts.js';

// What a run's `RunAgentInput` says (docs/protocols.md, "AG-UI"): the turn's message, the
// answers its `resume` entries give, the instructions its `context` brings.

type RunInput = z.output<typeof runInput>;

/** The turn's message: the text of the last message, which must be the user's. */
export function lastUserMessage(input: RunInput): string {
  const last = input.messages.at(-1);
  if (!last || last.role !== 'user') {
    throw new ParleyError('invalid_request', "the last message must be the user's new message", {
      field: 'messages',
    });
  }
  const content = last.content ?? '';
  return typeof content === 'string'
    ? content
    : content
        .filter((part) => part.type === 'text' && typeof part.text === 'string')
        .map((part) => part.text)
        .join('\n\n');
}

/**
 * A resume entry as an answer: `cancelled` refuses; a `resolved` payload `{approved,
 * reason?}` (or a bare boolean) answers an approval, `{answer}` (or a string) a question.
 */
export function answerOf(entry: z.output<typeof resumeEntry>): {
  approved: boolean;
  response: Record<string, unknown> | null;
  credentialRef: string | undefined;
} {
  if (entry.status === 'cancelled')
    return { approved: false, response: null, credentialRef: undefined };
  const payload = entry.payload;
  if (typeof payload === 'boolean')
    return { approved: payload, response: null, credentialRef: undefined };
  if (typeof payload === 'string') {
    return { approved: true, response: { answer: payload }, credentialRef: undefined };
  }
  if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) {
    const fields = payload as Record<string, unknown>;
    if (typeof fields.answer === 'string') {
      return { approved: true, response: { answer: fields.answer }, credentialRef: undefined };
    }
    if (typeof fields.approved === 'boolean') {
      const reason = typeof fields.reason === 'string' ? fields.reason.slice(0, 2000) : null;
      return {
        approved: fields.approved,
        response: reason ? { reason } : null,
        credentialRef:
          typeof fields.credential_ref === 'string' ? fields.credential_ref : undefined,
      };
    }
  }
  throw new ParleyError(
    'invalid_request',
    'resume payload: {"approved": boolean, "reason"?} or {"answer": string}',
    { field: 'resume' },
  );
}

/**
 * The client's `context` as the turn's own instructions, added to the agent's for this
 * turn only (as the OpenAI adapter's `instructions`); at most `contextLimitBytes`.
 */
export function instructionsOf(
  context: z.output<typeof runInput>['context'] & object,
): string | null {
  if (context.length === 0) return null;
  const bytes = context.reduce(
    (sum, entry) => sum + Buffer.byteLength(entry.description) + Buffer.byteLength(entry.value),
    0,
  );
  if (bytes > contextLimitBytes) {
    throw new ParleyError('invalid_request', `context: more than ${contextLimitBytes} bytes`, {
      field: 'context',
      limit_bytes: contextLimitBytes,
    });
  }
  const entries = context.map((entry) => `${entry.description}:\n${entry.value}`);
  return ['Context the client gave for this turn:', ...entries].join('\n\n');
}
