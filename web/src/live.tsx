/**
 * The app's one live connection: the user stream (`GET /api/v1/me/events`), opened once
 * per signed-in app and shared by every view. A view keeps itself fresh with
 * `useLiveRefresh`: it loads once, then again when the stream carries something it shows;
 * only while the stream is down does it poll, so an open app polls nothing.
 */
import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  type ReactNode,
} from 'react';
import type { ParleyClient, UserStreamFrame, UserStreamState } from 'parley/client';

type Listener = (frame: UserStreamFrame) => void;

interface Live {
  state: UserStreamState;
  listen(listener: Listener): () => void;
}

const LiveContext = createContext<Live | null>(null);

export function LiveProvider(props: { client: ParleyClient; children: ReactNode }) {
  const { client } = props;
  const listeners = useRef(new Set<Listener>());
  const [state, setState] = useState<UserStreamState>('connecting');
  useEffect(() => {
    const stream = client.subscribeUser({
      onFrame: (frame) => {
        for (const listener of listeners.current) listener(frame);
      },
      onState: (next) => setState(next),
      // A person is watching: retry sooner than a background client would.
      backoff: { initialMs: 250, maxMs: 4000 },
    });
    return () => stream.close();
  }, [client]);
  const listen = useCallback((listener: Listener) => {
    listeners.current.add(listener);
    return () => {
      listeners.current.delete(listener);
    };
  }, []);
  const live = useMemo(() => ({ state, listen }), [state, listen]);
  return <LiveContext.Provider value={live}>{props.children}</LiveContext.Provider>;
}

/** Whether the user stream is connected (views show it; tests wait for it). */
export function useLiveState(): UserStreamState {
  return useContext(LiveContext)?.state ?? 'closed';
}

/** A journal event of one of these types, in any session the user sees. */
export function sessionEventOf(...types: string[]): (frame: UserStreamFrame) => boolean {
  return (frame) =>
    frame.type === 'session_event' && (types.length === 0 || types.includes(frame.event.type));
}

/** What changes the approvals inbox: a request made, answered, escalated, or its turn ended. */
export const inboxEvents = sessionEventOf(
  'input_required',
  'input_resolved',
  'input_escalated',
  'done',
  'cancelled',
  'error',
);

/**
 * Runs `load` now and whenever it changes; again when the user stream carries a frame
 * `matches` accepts (several close together: one load, at most one per `gapMs`) or
 * (re)connects; and every `fallbackMs` only while the stream is not open.
 */
export function useLiveRefresh(
  load: () => unknown,
  matches: (frame: UserStreamFrame) => boolean,
  options: { fallbackMs: number; gapMs?: number },
): void {
  const live = useContext(LiveContext);
  const state = live?.state ?? 'closed';
  const latest = useRef({ load, matches });
  latest.current = { load, matches };
  const gapMs = options.gapMs ?? 150;

  useEffect(() => {
    void load();
  }, [load]);

  const listen = live?.listen;
  useEffect(() => {
    if (!listen) return;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const stop = listen((frame) => {
      const reconnected = frame.type === 'ready' || frame.type === 'resync';
      if (!reconnected && !latest.current.matches(frame)) return;
      if (timer !== null) return;
      timer = setTimeout(() => {
        timer = null;
        void latest.current.load();
      }, gapMs);
    });
    return () => {
      stop();
      if (timer !== null) clearTimeout(timer);
    };
  }, [listen, gapMs]);

  useEffect(() => {
    if (state === 'open') return;
    const timer = setInterval(() => void latest.current.load(), options.fallbackMs);
    return () => clearInterval(timer);
  }, [state, options.fallbackMs]);
}

/**
 * Calls `listener` with every frame of the user stream as it comes (for views that take
 * their content from the frames themselves, not only a cue to read again).
 */
export function useLiveFrames(listener: (frame: UserStreamFrame) => void): void {
  const listen = useContext(LiveContext)?.listen;
  const latest = useRef(listener);
  latest.current = listener;
  useEffect(() => listen?.((frame) => latest.current(frame)), [listen]);
}

/** Never: for a view that reads again only when the stream (re)connects. */
export const noFrames = (): boolean => false;

const liveLabels: Record<UserStreamState, string> = {
  connecting: 'connecting',
  open: 'live',
  reconnecting: 'reconnecting',
  closed: 'off',
};

/** A dot in the top bar: whether the app is live (else it polls). */
export function LiveIndicator() {
  const state = useLiveState();
  return (
    <span
      className={`live-indicator ${state}`}
      role="status"
      aria-label={`Updates: ${liveLabels[state]}`}
      title={`Updates: ${liveLabels[state]}`}
    >
      <span className="dot" aria-hidden="true" />
    </span>
  );
}
