import type { TranscriptMessage } from 'parley/client';
import { emptyConversation, type ConversationState } from './items.js';

/**
 * After a resync (the journal before the cursor was pruned): the durable transcript is
 * what is left to show. Nothing between may be assumed to have succeeded (PROTOCOL.md §7).
 */
export function fromTranscript(messages: TranscriptMessage[], cursor: number): ConversationState {
  const ordered = [...messages].sort((a, b) => a.sequence - b.sequence);
  return {
    ...emptyConversation,
    cursor,
    items: ordered.map((message) =>
      message.role === 'assistant' && message.turn_id
        ? {
            kind: 'text' as const,
            key: `f:${message.id}`,
            turnId: message.turn_id,
            author: message.author,
            text: message.content,
            sealed: true,
            final: true,
          }
        : {
            kind: 'message' as const,
            key: `m:${message.id}`,
            role: message.role,
            author: message.author,
            content: message.content,
            turnId: message.turn_id,
            attachments: message.attachments,
          },
    ),
  };
}
