import { z } from 'zod';
import { ParleyError } from '../../errors.js';
import { text } from '../validate.js';
import type { ResponseObject, StreamEvent } from './responseFold.js';

/**
 * Chat Completions over a one-turn session (docs/protocols.md): the whole history comes in
 * with every request, so it is folded into the one message the turn admits, and the
 * reply goes back as a completion or as completion chunks. Pure translation; the route
 * (routes.ts) admits and follows the turn.
 */

const contentPart = z
  .object({
    type: text(),
    text: text().optional(),
    image_url: z
      .object({ url: text().max(50_000_000) })
      .loose()
      .optional(),
    file: z
      .object({ file_id: text().min(1).max(128).optional() })
      .loose()
      .optional(),
  })
  .loose();

export const chatMessage = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
    content: z.union([text(), z.array(contentPart), z.null()]).optional(),
  })
  .loose();

export type ChatMessage = z.output<typeof chatMessage>;

/**
 * The outputs of the client's own tools the messages end with: the `tool` messages after
 * the last message of another role (the client ran the calls the previous completion
 * asked for). None: the messages end with a user's, as usual.
 */
export function chatToolOutputs(messages: ChatMessage[]): { callId: string; output: string }[] {
  const outputs: { callId: string; output: string }[] = [];
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index] as ChatMessage & { tool_call_id?: unknown };
    if (message.role !== 'tool') break;
    const callId = message.tool_call_id;
    if (typeof callId !== 'string' || callId.length === 0 || callId.length > 200) {
      throw refused('messages', 'messages: a tool message needs its tool_call_id');
    }
    outputs.unshift({ callId, output: textOf(message) });
  }
  return outputs;
}

function textOf(message: ChatMessage): string {
  const content = message.content;
  if (typeof content === 'string') return content;
  return (content ?? [])
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .filter((text) => text !== '')
    .join('\n');
}

/**
 * The message the turn admits: the last user message, preceded, when there is more, by
 * the conversation so far as quoted lines (`role: text`). The agent's own instructions
 * still govern; a client's system message is context, not instructions.
 */
export function foldChat(messages: ChatMessage[]): string {
  let last = -1;
  messages.forEach((message, index) => {
    if (message.role === 'user') last = index;
  });
  if (last === -1) return '';
  const latest = textOf(messages[last] as ChatMessage);
  const earlier = messages
    .filter((_, index) => index !== last)
    .map((message) => ({ role: message.role, text: textOf(message) }))
    .filter((entry) => entry.text.trim() !== '');
  if (earlier.length === 0) return latest;
  const quoted = earlier.map((entry) => `> ${entry.role}: ${entry.text.replace(/\n/g, '\n> ')}`);
  return `The conversation so far:\n${quoted.join('\n')}\n\n${latest}`;
}

/**
 * The images of the user messages as Responses content parts (what `imagesOf` reads): an
 * `image_url` part by its URL, a `file` part by its `file_id` (a file of the caller's; its
 * inline `file_data` is not taken: the files this server keeps are images).
 */
export function chatImages(messages: ChatMessage[]): { content: Record<string, unknown>[] }[] {
  return messages
    .filter((message) => message.role === 'user' && Array.isArray(message.content))
    .map((message) => ({
      content: (message.content as z.output<typeof contentPart>[]).flatMap(
        (part): Record<string, unknown>[] => {
          if (part.type === 'image_url') {
            if (!part.image_url) throw refused('image_url', 'image_url: give its url');
            return [{ type: 'input_image', image_url: part.image_url.url }];
          }
          if (part.type === 'file') {
            if (!part.file?.file_id) {
              throw refused('file', 'file: only a file_id (an image uploaded with POST /files)');
            }
            return [{ type: 'input_file', file_id: part.file.file_id }];
          }
          return [];
        },
      ),
    }));
}

function refused(field: string, message: string): ParleyError {
  return new ParleyError('invalid_request', message, { field });
}

interface CompletionIdentity {
  id: string;
  model: string;
  created: number;
}

/**
 * The reply of an ended response as a `chat.completion`; of one that waits for the
 * client's own tools, their calls (`tool_calls`, finish_reason `tool_calls`).
 */
export function completionOf(identity: CompletionIdentity, response: ResponseObject) {
  const text = response.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => part.text)
    .join('');
  const calls = response.output.flatMap((item) =>
    item.type === 'function_call' ? [toolCallOf(item)] : [],
  );
  const usage = response.usage;
  return {
    id: identity.id,
    object: 'chat.completion' as const,
    created: identity.created,
    model: identity.model,
    choices: [
      {
        index: 0,
        message:
          calls.length > 0
            ? {
                role: 'assistant' as const,
                content: text === '' ? null : text,
                refusal: null,
                tool_calls: calls,
              }
            : { role: 'assistant' as const, content: text, refusal: null },
        finish_reason: calls.length > 0 ? ('tool_calls' as const) : ('stop' as const),
        logprobs: null,
      },
    ],
    usage: {
      prompt_tokens: usage?.input_tokens ?? 0,
      completion_tokens: usage?.output_tokens ?? 0,
      total_tokens: usage?.total_tokens ?? 0,
    },
  };
}

function toolCallOf(item: { call_id: string; name: string; arguments: string }) {
  return {
    id: item.call_id,
    type: 'function' as const,
    function: { name: item.name, arguments: item.arguments },
  };
}

/**
 * A completion stream's chunks, made batch by batch from the response's stream events (a
 * batch: what one read of the journal folded). Chat Completions cannot take text back, so
 * the text of an attempt withdrawn within the batch it streamed in (a retried request's
 * replay of a turn whose earlier attempt failed) is never sent, and a withdrawal of text
 * already sent — or a committed reply that is not what was sent — ends the stream with an
 * error, `reply_withdrawn`: the client sends the request again with its Idempotency-Key and
 * gets the reply as it stands.
 */
export class CompletionChunks {
  /** The text sent of each message item. */
  private readonly sent = new Map<string, string>();

  constructor(private readonly identity: CompletionIdentity) {}

  /** Calls of the client's own tools sent so far (their `index` in `tool_calls`). */
  private calls = 0;

  /**
   * The chunks of these events; `broken`: the stream must end with that error;
   * `toolCalls`: it ends here, with the calls of the client's tools it sent.
   */
  of(events: StreamEvent[]): { chunks: unknown[]; broken: string | null; toolCalls: boolean } {
    const withdrawn = new Set(
      events
        .filter((event) => event.type === 'response.output_item.done')
        .map((event) => event.item as { id: string; status: string })
        .filter((item) => item.status === 'incomplete')
        .map((item) => item.id),
    );
    const chunks: unknown[] = [];
    for (const event of events) {
      switch (event.type) {
        case 'response.created':
          chunks.push(this.chunk({ role: 'assistant', content: '' }, null));
          break;
        case 'response.output_text.delta': {
          const id = event.item_id as string;
          if (withdrawn.has(id)) break;
          this.sent.set(id, (this.sent.get(id) ?? '') + (event.delta as string));
          chunks.push(this.chunk({ content: event.delta }, null));
          break;
        }
        case 'response.output_text.done': {
          const sent = this.sent.get(event.item_id as string) ?? '';
          const text = event.text as string;
          if (!text.startsWith(sent)) return { chunks, broken: withdrawnReply, toolCalls: false };
          if (text.length > sent.length)
            chunks.push(this.chunk({ content: text.slice(sent.length) }, null));
          this.sent.set(event.item_id as string, text);
          break;
        }
        case 'response.output_item.done': {
          const item = event.item as { id: string; status: string };
          if (item.status === 'incomplete' && (this.sent.get(item.id) ?? '') !== '') {
            return { chunks, broken: withdrawnReply, toolCalls: false };
          }
          break;
        }
        case 'response.output_item.added': {
          const item = event.item as {
            type: string;
            call_id: string;
            name: string;
            arguments: string;
          };
          if (item.type !== 'function_call') break;
          const call = { index: this.calls++, ...toolCallOf(item) };
          chunks.push(this.chunk({ tool_calls: [call] }, null));
          break;
        }
        case 'response.completed':
          chunks.push(this.chunk({}, 'stop'));
          break;
      }
    }
    // The turn waits for the client's tools: the completion ends with their calls.
    if (this.calls > 0) chunks.push(this.chunk({}, 'tool_calls'));
    return { chunks, broken: null, toolCalls: this.calls > 0 };
  }

  private chunk(delta: Record<string, unknown>, finish: string | null) {
    return {
      id: this.identity.id,
      object: 'chat.completion.chunk',
      created: this.identity.created,
      model: this.identity.model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    };
  }
}

const withdrawnReply =
  'the reply was interrupted after part of it was sent and is being made again; send the request again with the same Idempotency-Key';

/** A turn that did not end with a reply, as the error a completion answers. */
export function turnFailed(response: ResponseObject): ParleyError {
  if (response.status === 'queued' || response.status === 'in_progress') {
    return new ParleyError(
      'turn_pending',
      `the turn had not ended within server.blocking_wait_ms; it goes on (${response.id})`,
    );
  }
  if (response.status === 'cancelled') {
    return new ParleyError('turn_failed', 'the turn was cancelled', { turn_error: 'cancelled' });
  }
  return new ParleyError('turn_failed', response.error?.message ?? 'the turn failed', {
    turn_error: response.error?.code ?? 'error',
  });
}
