import type { UIMessageChunk } from 'ai';
import type { ParleyClient, ParleyEvent, Subscription } from '../client/index.js';
import { ChunkMapper, withoutAbandonedText } from './chunks.js';

/** Where a burst's events begin in the journal, and how much of it is history already. */
export interface BurstStart {
  after: number;
  replayUntil?: number | undefined;
}

/**
 * One burst's journal events after `after`, as UI message chunks, until the burst ends
 * (done, cancelled, error) or waits for a person (closed after the last of its parallel
 * requests). `replayUntil`: history up to there is read first and cleaned of abandoned
 * text.
 *
 * A turn admitted while another one's reply streams is folded into that burst, whose lead
 * is the other turn: the reply that answers both is `reply_<lead>`, one message. When the
 * stream's turn turns out to be folded, before anything was shown, `findBurst(lead)` says
 * where the lead's burst begins and the stream shows that burst from its start, as a
 * reconnect would (null: it cannot be found; the stream ends).
 *
 * `onEnd`: the burst ended or waits for a person (not called when the signal aborted).
 */
export function journalStream(
  client: ParleyClient,
  args: BurstStart & {
    sessionId: string;
    mapper: ChunkMapper;
    signal: AbortSignal | undefined;
    findBurst: (lead: string) => Promise<BurstStart | null>;
    onEnd: () => void;
  },
): ReadableStream<UIMessageChunk> {
  const { signal } = args;
  let mapper = args.mapper;
  let subscription: Subscription | null = null;
  let closed = false;
  return new ReadableStream<UIMessageChunk>({
    start: (controller) => {
      const finish = (ended: boolean) => {
        if (closed) return;
        closed = true;
        subscription?.close();
        controller.close();
        if (ended) args.onEnd();
      };
      const emit = (event: ParleyEvent) => {
        for (const chunk of mapper.map(event)) controller.enqueue(chunk);
      };
      const checkWaiting = async (sequence: number) => {
        // The requests of one step are journaled in one transaction, so the journal as
        // it is now holds all of them: close after the last. (The session's state may not
        // say input_required yet: the worker releases it in a later transaction.)
        const projection = await client.getSession(args.sessionId);
        if (sequence >= projection.latest_sequence) finish(true);
      };
      const follow = async (lead: string) => {
        subscription?.close();
        subscription = null;
        const burst = await args.findBurst(lead);
        if (closed) return;
        if (!burst) return finish(true);
        mapper = new ChunkMapper(lead, 'new');
        open(burst);
      };
      const open = (burst: BurstStart) => {
        let history: ParleyEvent[] | null =
          burst.replayUntil !== undefined && burst.replayUntil > burst.after ? [] : null;
        const own: { subscription: Subscription | null } = { subscription: null };
        const current = () => !closed && subscription !== null && subscription === own.subscription;
        own.subscription = subscription = client.subscribe(args.sessionId, {
          after: burst.after,
          stopOnTerminal: false,
          onEvent: async (event) => {
            if (!current()) return;
            if (history !== null) {
              history.push(event);
              if (event.sequence < (burst.replayUntil ?? 0)) return;
              const replay = withoutAbandonedText(history);
              history = null;
              for (const past of replay) {
                const lead = mapper.foldedInto(past);
                if (lead !== null) return follow(lead);
                emit(past);
                if (mapper.finished) return finish(true);
              }
            } else {
              const lead = mapper.foldedInto(event);
              if (lead !== null) return follow(lead);
              emit(event);
            }
            if (mapper.finished) return finish(true);
            if (mapper.waiting) await checkWaiting(event.sequence);
          },
          onResync: () => {
            if (!current()) return;
            // The turn's history was pruned under the stream: what it showed may be
            // incomplete, so say so rather than pretend.
            controller.enqueue({
              type: 'error',
              errorText: 'the conversation had to be resynchronised; reload it',
            });
            finish(true);
          },
          onState: (change) => {
            if (!current()) return;
            if (change.state === 'closed' && change.reason === 'fatal') {
              controller.error(change.error ?? new Error('the event stream failed'));
              closed = true;
              subscription?.close();
            }
          },
        });
      };
      if (signal?.aborted) return finish(false);
      signal?.addEventListener('abort', () => finish(false), { once: true });
      open(args);
    },
    cancel: () => {
      closed = true;
      subscription?.close();
    },
  });
}
