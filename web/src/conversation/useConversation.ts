import { useCallback, useEffect, useReducer, useRef, useState } from 'react';
import {
  newClientKey,
  type ParleyClient,
  type ParleyEvent,
  type SessionProjection,
} from 'parley/client';
import { markSeen } from '../unread';
import { emptyConversation, fromTranscript, reduce, type ConversationState } from './model';

/** What the connection indicator shows. */
export type Connection = 'connecting' | 'live' | 'reconnecting' | 'resyncing' | 'offline';

/** A message sent from this page and not yet seen in the journal. */
export interface PendingPost {
  turnId: string;
  text: string;
  status: 'sending' | 'failed';
  error?: string | undefined;
  /** Ids of the images it carries (attachments of the session). */
  attachments?: string[] | undefined;
}

type Action = { type: 'event'; event: ParleyEvent } | { type: 'reset'; state: ConversationState };

function reducer(state: ConversationState, action: Action): ConversationState {
  return action.type === 'event' ? reduce(state, action.event) : action.state;
}

/** Without a typing signal or new text for this long, "writing…" goes away. */
const writingMs = 12_000;

/**
 * One open conversation: the journal from the start (so a reload, a lost network or a
 * reopened tab rebuild exactly what was there, mid-reply included), then live. The
 * subscription's cursor advances only after an event is applied; its reconnects send
 * `Last-Event-ID`, and the reducer ignores anything at or below its cursor.
 */
export function useConversation(
  client: ParleyClient,
  sessionId: string,
  /** Told of every event after the page applied it (reading replies aloud listens). */
  listener?: (event: ParleyEvent) => void,
) {
  const [state, dispatch] = useReducer(reducer, emptyConversation);
  const [connection, setConnection] = useState<Connection>('connecting');
  const [projection, setProjection] = useState<SessionProjection | null>(null);
  const [writingUntil, setWritingUntil] = useState(0);
  const [pending, setPending] = useState<PendingPost[]>([]);
  const [, setTick] = useState(0);
  const refreshTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  // The final message of each answered turn: what its reply is read aloud from.
  const [replyIds, setReplyIds] = useState<Record<string, string>>({});
  const listening = useRef(listener);
  listening.current = listener;

  const refresh = useCallback(() => {
    if (refreshTimer.current !== null) return;
    refreshTimer.current = setTimeout(() => {
      refreshTimer.current = null;
      client.getSession(sessionId).then(setProjection, () => {});
    }, 150);
  }, [client, sessionId]);

  useEffect(() => {
    let resyncing = false;
    client.getSession(sessionId).then(setProjection, () => {});
    const subscription = client.subscribe(sessionId, {
      after: 0,
      stopOnTerminal: false,
      // A person is watching: retry sooner than a background client would.
      backoff: { initialMs: 250, maxMs: 4000 },
      onEvent: (event) => {
        dispatch({ type: 'event', event });
        markSeen(sessionId, event.sequence);
        if (event.type === 'text_delta') setWritingUntil(Date.now() + writingMs);
        if (['done', 'cancelled', 'error', 'input_required'].includes(event.type))
          setWritingUntil(0);
        if (event.type === 'message' && event.turn_id) {
          const turnId = event.turn_id;
          setPending((posts) => posts.filter((post) => post.turnId !== turnId));
        }
        if (event.type === 'done') {
          const messageId = event.final_message.id;
          setReplyIds((known) => {
            const added = { ...known };
            for (const turnId of [event.turn_id, ...event.turn_ids]) added[turnId] = messageId;
            return added;
          });
        }
        if (event.type !== 'text_delta') refresh();
        listening.current?.(event);
      },
      onResync: async (fresh) => {
        resyncing = true;
        setConnection('resyncing');
        const page = await client.listMessages(sessionId, { limit: 200 });
        dispatch({ type: 'reset', state: fromTranscript(page.items, fresh.latest_sequence) });
        setProjection(fresh);
        markSeen(sessionId, fresh.latest_sequence);
      },
      onTyping: () => setWritingUntil(Date.now() + writingMs),
      onState: (change) => {
        if (change.state === 'open') {
          resyncing = false;
          setConnection('live');
        } else if (change.state === 'reconnecting') {
          setConnection(resyncing ? 'resyncing' : 'reconnecting');
        } else if (change.state === 'connecting') {
          setConnection('connecting');
        } else {
          setConnection('offline');
        }
      },
    });
    return () => subscription.close();
  }, [client, sessionId, refresh]);

  // Re-render when "writing…" should lapse.
  useEffect(() => {
    if (writingUntil === 0) return;
    const timer = setTimeout(
      () => setTick((tick) => tick + 1),
      Math.max(0, writingUntil - Date.now()) + 50,
    );
    return () => clearTimeout(timer);
  }, [writingUntil]);

  const send = useCallback(
    async (text: string, turnId = newClientKey('turn'), attachments: string[] = []) => {
      setPending((posts) => [
        ...posts.filter((post) => post.turnId !== turnId),
        { turnId, text, status: 'sending', attachments },
      ]);
      try {
        await client.admitTurn({ sessionId, message: text, turnId, attachments });
        refresh();
      } catch (error) {
        const message = (error as Error).message;
        setPending((posts) =>
          posts.map((post) =>
            post.turnId === turnId ? { ...post, status: 'failed', error: message } : post,
          ),
        );
        throw error;
      }
    },
    [client, sessionId, refresh],
  );

  const writing =
    writingUntil > Date.now() && (state.activeTurn !== null || state.openTurns.length > 0);
  return { state, connection, projection, writing, pending, send, refresh, replyIds };
}
