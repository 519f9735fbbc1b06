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
  /** An approval's (or reconciliation's) digest of its arguments: its buttons carry it. */
  arguments_digest?: string;
  /** When its default applies if nobody answers (ISO time). */
  deadline_at?: string;
  resolution?: { approved: boolean; actor: string | null; expired?: string; state?: string };
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

/**
 * How many hex digits of `arguments_digest` an approval's buttons carry after the row's id
 * (`rep_<ULID>.<digits>`): what fits in Telegram's 64 bytes with the SDK's wrapping. A
 * press whose digits are not its card's is refused; the card's whole digest is then
 * checked against the request's, as a web answer's is.
 */
export const digestDigitsInButton = 8;

/** The value of an approval card's buttons. */
export function approvalButtonValue(replyId: string, card: ApprovalCard): string {
  return card.arguments_digest === undefined
    ? replyId
    : `${replyId}.${card.arguments_digest.slice(0, digestDigitsInButton)}`;
}
