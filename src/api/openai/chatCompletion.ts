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

/** The reply of an ended response as a `chat.completion`. */
export function completionOf(identity: CompletionIdentity, response: ResponseObject) {
  const text = response.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => part.text)
    .join('');
  const usage = response.usage;
  return {
    id: identity.id,
    object: 'chat.completion' as const,
    created: identity.created,
    model: identity.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant' as const, content: text, refusal: null },
        finish_reason: 'stop' as const,
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

  /** The chunks of these events; `broken`: the stream must end with that error. */
  of(events: StreamEvent[]): { chunks: unknown[]; broken: string | null } {
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
          if (!text.startsWith(sent)) return { chunks, broken: withdrawnReply };
          if (text.length > sent.length)
            chunks.push(this.chunk({ content: text.slice(sent.length) }, null));
          this.sent.set(event.item_id as string, text);
          break;
        }
        case 'response.output_item.done': {
          const item = event.item as { id: string; status: string };
          if (item.status === 'incomplete' && (this.sent.get(item.id) ?? '') !== '') {
            return { chunks, broken: withdrawnReply };
          }
          break;
        }
        case 'response.completed':
          chunks.push(this.chunk({}, 'stop'));
          break;
      }
    }
    return { chunks, broken: null };
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
