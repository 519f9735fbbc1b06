import type { UIMessage } from 'ai';
import type { TranscriptMessage } from '../client/index.js';

/** The id of the assistant message that answers a turn, the same live and after a reload. */
export function replyMessageId(turnId: string): string {
  return `reply_${turnId}`;
}

/**
 * The durable transcript (newest first, as GET …/messages sends it) as `useChat` initial
 * messages, oldest first. User messages keep their turn id as their id, replies get
 * `replyMessageId(turn)`: the ids a live stream gives them, so a resumed stream replaces
 * rather than duplicates.
 */
export function toUIMessages(transcript: TranscriptMessage[]): UIMessage[] {
  return [...transcript]
    .sort((a, b) => a.sequence - b.sequence)
    .map((message) => ({
      id:
        message.turn_id === null
          ? message.id
          : message.role === 'assistant'
            ? replyMessageId(message.turn_id)
            : message.turn_id,
      role: message.role,
      parts: [{ type: 'text' as const, text: message.content }],
      metadata: { parley: { author: message.author, sequence: message.sequence } },
    }));
}

/**
 * Text of an attempt that the runtime abandoned (`attempt_reset`) while it was being
 * streamed live: the AI SDK cannot take streamed text back, so the transport marks the
 * part and apps skip it. Replays (reconnectToStream) never contain such parts.
 */
export function isAbandonedPart(part: UIMessage['parts'][number]): boolean {
  const metadata = (part as { providerMetadata?: { parley?: { abandoned?: unknown } } })
    .providerMetadata;
  return metadata?.parley?.abandoned === true;
}
