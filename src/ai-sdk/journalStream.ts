import type { UIMessageChunk } from 'ai';
import type { ParleyClient, ParleyEvent, Subscription } from '../client/index.js';
import { withoutAbandonedText, type ChunkMapper } from './chunks.js';

/**
 * One burst's journal events after `after`, as UI message chunks, until the burst ends
 * (done, cancelled, error) or waits for a person (closed after the last of its parallel
 * requests). `replayUntil`: history up to there is read first and cleaned of abandoned
 * text. `onStop`: the signal aborted while the burst was still open.
 */
export function journalStream(
  client: ParleyClient,
  args: {
    sessionId: string;
    after: number;
    mapper: ChunkMapper;
    signal: AbortSignal | undefined;
    replayUntil?: number;
    onStop: () => void;
  },
): ReadableStream<UIMessageChunk> {
  const { mapper, signal } = args;
  let subscription: Subscription | null = null;
  let closed = false;
  let history: ParleyEvent[] | null =
    args.replayUntil !== undefined && args.replayUntil > args.after ? [] : null;
  return new ReadableStream<UIMessageChunk>({
    start: (controller) => {
      const finish = () => {
        if (closed) return;
        closed = true;
        subscription?.close();
        controller.close();
      };
      const emit = (event: ParleyEvent) => {
        for (const chunk of mapper.map(event)) controller.enqueue(chunk);
      };
      const checkWaiting = async (sequence: number) => {
        // The requests of one step are journaled in one transaction, so the journal as
        // it is now holds all of them: close after the last. (The session's state may not
        // say input_required yet: the worker releases it in a later transaction.)
        const projection = await client.getSession(args.sessionId);
        if (sequence >= projection.latest_sequence) finish();
      };
      signal?.addEventListener(
        'abort',
        () => {
          const open = !mapper.finished;
          finish();
          if (open) args.onStop();
        },
        { once: true },
      );
      if (signal?.aborted) return finish();
      subscription = client.subscribe(args.sessionId, {
        after: args.after,
        stopOnTerminal: false,
        onEvent: async (event) => {
          if (closed) return;
          if (history !== null) {
            history.push(event);
            if (event.sequence < (args.replayUntil ?? 0)) return;
            const replay = withoutAbandonedText(history);
            history = null;
            for (const past of replay) {
              emit(past);
              if (mapper.finished) return finish();
            }
          } else {
            emit(event);
          }
          if (mapper.finished) return finish();
          if (mapper.waiting) await checkWaiting(event.sequence);
        },
        onResync: () => {
          // The turn's history was pruned under the stream: what it showed may be
          // incomplete, so say so rather than pretend.
          controller.enqueue({
            type: 'error',
            errorText: 'the conversation had to be resynchronised; reload it',
          });
          finish();
        },
        onState: (change) => {
          if (change.state === 'closed' && change.reason === 'fatal' && !closed) {
            controller.error(change.error ?? new Error('the event stream failed'));
            closed = true;
          }
        },
      });
    },
    cancel: () => {
      closed = true;
      subscription?.close();
    },
  });
}
