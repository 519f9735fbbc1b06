import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDiscordGateway } from '../src/adapters/discordGateway.js';
import { ParleyChatState } from '../src/adapters/state.js';
import { createLogger } from '../src/log.js';
import type { Db } from '../src/store/db.js';
import { openTestDb } from './support/db.js';
import { until } from './support/poll.js';

const log = createLogger({ level: 'silent' });
let db: Db;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ db, close } = await openTestDb());
});
afterAll(async () => {
  await close();
});

/** A stand-in for the Discord connection: records who holds it, runs until told to stop. */
function session(name: string, log: string[]) {
  return async (signal: AbortSignal) => {
    log.push(`${name} open`);
    await new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
    log.push(`${name} closed`);
  };
}

describe('the Discord Gateway connection (one holder across processes)', () => {
  it('is held by one process at a time, and taken over when that process stops', async () => {
    // Two processes' states on one database: the lock is shared through chat_state_locks.
    const first = new ParleyChatState(db, log);
    const second = new ParleyChatState(db, log);
    await first.connect();
    await second.connect();
    const events: string[] = [];
    const a = startDiscordGateway({ state: first, run: session('a', events), log, lockTtlMs: 600 });
    await until(
      () => events,
      (seen) => seen.includes('a open'),
      'the first holder',
    );
    const b = startDiscordGateway({
      state: second,
      run: session('b', events),
      log,
      lockTtlMs: 600,
    });
    // b keeps trying (every ttl/3) while a renews its lock: it never opens a second session.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(events).toEqual(['a open']);
    await a.stop();
    await until(
      () => events,
      (seen) => seen.includes('b open'),
      'the takeover',
    );
    expect(events).toEqual(['a open', 'a closed', 'b open']);
    await b.stop();
    expect(events.at(-1)).toBe('b closed');
  });
});
