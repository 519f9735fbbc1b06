import { ParleyError } from '../../errors.js';
import type { ClientToolOutput } from '../clientToolOutputs.js';

/**
 * The outputs of the front end's own tools a run brings: the `tool` messages after its
 * last message of another role (the client ran the calls the previous run ended with, and
 * sends their outputs, with no new user message). A message's `error` says the client did
 * not run the call. The `tool` messages Parley itself streamed (TOOL_CALL_RESULT, id
 * `<call id>.result`) are the client's copy of the result and are skipped, as is a second
 * message for one call. None: the run brings a user message as usual.
 */
export function toolOutputsOf(input: {
  messages: readonly ({ role: string; content?: unknown } & Record<string, unknown>)[];
}): ClientToolOutput[] {
  const outputs: ClientToolOutput[] = [];
  for (let index = input.messages.length - 1; index >= 0; index--) {
    const message = input.messages[index] as (typeof input.messages)[number];
    if (message.role !== 'tool') break;
    const callId = message.toolCallId;
    if (typeof callId !== 'string' || callId.length === 0 || callId.length > 200) {
      throw new ParleyError('invalid_request', 'messages: a tool message needs its toolCallId', {
        field: 'messages',
      });
    }
    if (message.id === `${callId}.result`) continue;
    const error = typeof message.error === 'string' ? message.error.slice(0, 4000) : undefined;
    const later = outputs.findIndex((output) => output.callId === callId);
    if (later >= 0) outputs.splice(later, 1);
    outputs.unshift({ callId, output: textOf(message.content), error });
  }
  return outputs;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part as { text?: unknown }).text)
      .filter((text): text is string => typeof text === 'string')
      .join('\n\n');
  }
  return '';
}
