import { describe, expect, it } from 'vitest';
import { startCatalogRefresh } from '../src/catalog/refresh.js';

/** The refresh loop with its I/O injected: a sleep that waits for the test to release it. */
function steppedSleep() {
  const waiting: { ms: number; release: () => void }[] = [];
  const sleep = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      waiting.push({ ms, release: resolve });
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  const tick = async () => {
    const next = waiting.shift();
    if (!next) throw new Error('nothing is sleeping');
    next.release();
    // let the loop run its sync and go back to sleep
    for (let turn = 0; turn < 10; turn++) await Promise.resolve();
  };
  return { sleep, waiting, tick };
}

describe('catalog refresh (catalog.refresh_hours)', () => {
  it('syncs once per interval, reports a failing sync and keeps going, stops at once', async () => {
    const { sleep, waiting, tick } = steppedSleep();
    const outcomes: string[] = [];
    let calls = 0;
    const refresh = startCatalogRefresh({
      intervalMs: 6 * 3_600_000,
      sleep,
      sync: async () => {
        calls++;
        if (calls === 2) throw new Error('provider down');
        outcomes.push(`synced ${calls}`);
      },
      onError: (error) => outcomes.push(`failed: ${(error as Error).message}`),
    });
    await Promise.resolve();
    expect(waiting.map((entry) => entry.ms)).toEqual([21_600_000]);
    expect(calls).toBe(0);
    await tick();
    await tick();
    await tick();
    expect(outcomes).toEqual(['synced 1', 'failed: provider down', 'synced 3']);
    await refresh.stop();
    expect(calls).toBe(3);
  });

  it('stops with the real sleep without waiting for the interval', async () => {
    let calls = 0;
    const refresh = startCatalogRefresh({
      intervalMs: 24 * 3_600_000,
      sync: async () => {
        calls++;
      },
      onError: () => {},
    });
    await refresh.stop();
    expect(calls).toBe(0);
  });
});
