import type { AgentConfig } from '../config/types.js';
import { newMessageId, newRequestId } from '../ids.js';
import type { NewEvent } from '../protocol/events.js';
import type { commitTurn } from '../store/commitTurn.js';
import type { BurstRef, BurstState, Lease } from '../store/types.js';
import type { Usage } from '../store/usageRows.js';

/** What closes a burst with a reply: the model's last step, or text the runtime wrote. */
export interface Reply {
  text: string;
  options: string[] | null;
  usage: Usage[];
  /** What the last step streamed and is not journaled yet. */
  tail: NewEvent[];
  /** Events journaled before the reply (the scope gate's verdict). */
  before?: NewEvent[];
  /** The reply as written, when it is not the model's (the gate's redirect). */
  raw?: string;
}

/**
 * The commit of a burst's reply (RUNTIME.md, "finish"): the whole visible reply (every
 * model step's text), or the agent's fixed completion text with the model's reply kept
 * as the raw content; the options offered; usage; the tail; and the memory writes the
 * turn's tools buffered, applied in the same transaction.
 */
export function closingMessage(
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  ref: BurstRef & { author: string },
  reply: Reply,
): Parameters<typeof commitTurn>[2] {
  const text = reply.raw ?? replyText(burst, reply.text);
  return {
    turnIds: ref.turnIds,
    lastPosition: ref.lastPosition,
    messageId: newMessageId(),
    author: agent.name,
    content:
      agent.completionText === null
        ? text
        : completedReply(text, agent.completionText, agent.completionReplaces),
    rawContent: agent.completionText === null ? null : text,
    options: reply.options ? { request_id: newRequestId(), choices: reply.options } : null,
    usage: reply.usage,
    user: ref.author,
    tail: reply.tail,
    before: reply.before ?? [],
    effects: {
      owner: { tenant: lease.tenant, agent: agent.name, user: ref.author },
      list: burst.effects ?? [],
    },
  };
}

/**
 * The visible reply of an agent with a fixed completion text: the model's reply with its
 * closing sentence replaced by the text (`closing_sentence`), or the text alone (`reply`,
 * and a reply of one sentence). A sentence ends at `.`, `!`, `?` or `…` (closing quotes
 * and brackets included) followed by white space.
 */
export function completedReply(
  reply: string,
  completion: string,
  replaces: 'closing_sentence' | 'reply',
): string {
  if (replaces === 'reply') return completion;
  const body = reply.trimEnd();
  const kept = /^[\s\S]*[.!?\u2026]["'\u2019\u201d)\]]*\s+(?=\S)/.exec(body);
  return kept ? kept[0] + completion : completion;
}

/** The whole visible reply of a burst: the text of every model step. */
export function replyText(burst: BurstState, last: string): string {
  return [...burst.steps.filter((step) => step.kind === 'model').map((step) => step.text), last]
    .filter((text) => text.trim().length > 0)
    .join('\n\n');
}
