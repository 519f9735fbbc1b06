import type { InputKind } from '../../protocol/events.js';

/**
 * What one outbox row should show on the platform. Built from the journal by `fold`,
 * turned into the platform's message by `render`.
 *
 * - `reply`: the text of a turn's answer as it streams, then its ending (done, error,
 *   cancelled) and any options offered, then the option chosen.
 * - `approval`: an input request (PROTOCOL.md §4) as a card with buttons, then how it was
 *   resolved.
 * - `notice`: a fixed message (the agent's greeting).
 */
export type ReplyContent = ReplyText | ApprovalCard | Notice;

export interface ReplyText {
  type: 'reply';
  text: string;
  status: 'streaming' | 'done' | 'error' | 'cancelled';
  error?: string;
  options?: { request_id: string; choices: string[]; chosen?: string };
}

export interface ApprovalCard {
  type: 'approval';
  kind: InputKind;
  request_id: string;
  expected_sequence: number;
  tool?: string;
  arguments?: unknown;
  prompt?: string;
  resolution?: { approved: boolean; actor: string | null; expired?: string };
}

export interface Notice {
  type: 'notice';
  text: string;
}

/** An outbox row as the fold reads and writes it. */
export interface OutboxRow {
  reply_id: string;
  kind: 'reply' | 'approval' | 'notice';
  turn_id: string | null;
  request_id: string | null;
  content: ReplyContent;
  version: number;
  final: boolean;
  /** Set by the fold when there is nothing to post (an empty reply that ended). */
  state: 'pending' | 'delivered' | 'dead';
  platform_message_id: string | null;
}

/** Button ids: short, because Telegram's callback data holds 64 bytes in all. */
export const actionIds = { approve: 'p.a', reject: 'p.r', option: 'p.o' } as const;
