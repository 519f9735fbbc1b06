import { z } from 'zod';
import { text } from '../validate.js';
import type { ResponseObject, StreamEvent } from './responseFold.js';

/**
 * Chat Completions over a one-turn session (docs/protocols.md): the whole history comes in
 * with every request, so it is folded into the one message the turn admits, and the
 * reply goes back as a completion or as completion chunks. Pure translation; the route
 * (routes.ts) admits and follows the turn.
 */

const contentPart = z.object({ type: text(), text: text().optional() }).loose();

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

/** The completion chunks a response stream event becomes (none for most of them). */
export function chunksOf(identity: CompletionIdentity, event: StreamEvent): unknown[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
    id: identity.id,
    object: 'chat.completion.chunk',
    created: identity.created,
    model: identity.model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });
  switch (event.type) {
    case 'response.created':
      return [chunk({ role: 'assistant', content: '' }, null)];
    case 'response.output_text.delta':
      return [chunk({ content: event.delta }, null)];
    case 'response.completed':
      return [chunk({}, 'stop')];
    default:
      return [];
  }
}
