import { useEffect, useMemo, useRef } from 'react';
import { sessionEventOf, useLiveRefresh } from '../../live';

/**
 * Runs a panel's one `load` now, again whenever the user stream carries an event of a
 * session the user sees (an execution's status, a request, a reply: at most one load per
 * second), and every `ms` only while the stream is down; again at once whenever `load`
 * changes (its filters). A slow answer never overlaps the next, and `current()` tells a
 * load whether its answer still counts (the filters it was asked with are still the
 * panel's).
 */
export function usePoll(load: (current: () => boolean) => Promise<void>, ms: number): void {
  const generation = useRef(0);
  useEffect(() => {
    const mine = ++generation.current;
    return () => {
      if (generation.current === mine) generation.current++;
    };
  }, [load]);
  const tick = useMemo(() => {
    let running = false;
    return async () => {
      if (running) return;
      running = true;
      const mine = generation.current;
      try {
        await load(() => generation.current === mine);
      } finally {
        running = false;
      }
    };
  }, [load]);
  useLiveRefresh(tick, anySessionEvent, { fallbackMs: ms, gapMs: 1000 });
}

const anySessionEvent = sessionEventOf();
