import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// A stream's slot (`limits.streams_per_principal`) is taken before the route prepares the
// stream, which reads the journal up to the client's cursor. When the database is slow,
// a client gives up waiting and comes again: the request it left must not keep its slot
// until that preparation ends, or a few such retries fill the principal's slots with
// streams nobody reads.

let server: TestServer;
let other: Db;

beforeAll(async () => {
  server = await startTestServer({ limits: { streams_per_principal: 1 } });
  other = await openPostgres(server.config.storage.url as string, 2);
});
afterAll(async () => {
  await other?.close();
  await server?.close();
});

/** Thread streams being prepared from a cursor, waiting for the lock on `events`. */
async function waitingOnEvents(): Promise<number> {
  const found = await other.query<{ waiting: number }>(
    `select count(*)::int as waiting from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where not l.granted and l.relation = 'events'::regclass
        and a.query like '%last_sequence%stateful%'`,
  );
  return (found.rows[0] as { waiting: number }).waiting;
}

describe('a stream slot and a client that left while the stream was prepared', () => {
  it('is given back when the client leaves, not when the preparation ends', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'slot_gone_1',
      message: 'hello',
    });
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id as string;
    await until(
      () => request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`),
      (found) => found.body.state === 'idle' && found.body.queued_turns === 0,
      'the turn answered',
    );
    const url = `${server.url}/ag-ui/default/threads/${sessionId}/events`;
    const open = (signal: AbortSignal) =>
      fetch(url, { headers: { accept: 'text/event-stream', 'last-event-id': '2' }, signal });

    // The journal cannot be read: preparing a stream from a cursor waits.
    let unlock = () => {};
    const unlocked = new Promise<void>((resolve) => (unlock = resolve));
    let locked = false;
    const holding = other.transaction(async (tx) => {
      await tx.query('lock table events in access exclusive mode');
      locked = true;
      await unlocked;
    });
    const statuses: number[] = [];
    try {
      while (!locked) await new Promise((resolve) => setTimeout(resolve, 10));
      const first = new AbortController();
      const leaving = open(first.signal).catch(() => null);
      await until(waitingOnEvents, (waiting) => waiting === 1, 'the first stream preparing');
      first.abort();
      await leaving;

      // The same client again, on the one slot: it is let in (and waits for the journal).
      const second = new AbortController();
      const again = open(second.signal)
        .then((response) => statuses.push(response.status))
        .catch(() => null);
      await until(
        async () => ({ waiting: await waitingOnEvents(), answered: statuses.length }),
        (seen) => seen.waiting === 2 || seen.answered > 0,
        'the second stream let in or refused',
      );
      expect(statuses).toEqual([]);
      second.abort();
      await again;
    } finally {
      unlock();
      await holding;
    }
    expect(statuses).toEqual([]);
  });
});
