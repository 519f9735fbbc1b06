import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { freshStorage } from './support/db.js';
import { until } from './support/poll.js';
import { startParley, stopAllProcesses, type ParleyProcess } from './support/processes.js';
import { request } from './support/server.js';
import { SseClient } from './support/sse.js';

// `parley api` and a `parley worker` on one PostgreSQL: a session is deleted while the
// worker streams its reply. The deletion takes the session row first; the worker's next
// token-gated write applies nothing, it stops without an error, and nothing of the session
// is written again.
const words = Array.from({ length: 200 }, (_, index) => `word${index + 1}`).join(' ');
let db: Db;
let api: ParleyProcess;
let worker: ParleyProcess;
let drop: () => Promise<void>;

beforeAll(async () => {
  const fresh = await freshStorage();
  drop = fresh.drop;
  const url = fresh.storage.url as string;
  const start = {
    databaseUrl: url,
    env: { PARLEY_DEMO_DELAY_MS: '40' },
    config: { runtime: { lease_ttl_ms: 3000, heartbeat_ms: 1000, poll_ms: 200 } },
    readyTimeoutMs: 60_000,
  };
  api = await startParley('api', start);
  worker = await startParley('worker', start);
  db = await openPostgres(url, 2);
});
afterAll(async () => {
  await db?.close();
  await stopAllProcesses();
  await drop?.();
});

/** Rows of every table that mention the session id, by table. */
async function rowsOf(sessionId: string): Promise<[string, number][]> {
  const tables = await db.query<{ table_name: string }>(
    `select table_name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE'`,
  );
  const found: [string, number][] = [];
  for (const { table_name: table } of tables.rows) {
    const rows = await db.query<{ n: number }>(
      `select count(*)::int as n from "${table}" t where t::text like '%' || $1 || '%'`,
      [sessionId],
    );
    if ((rows.rows[0]?.n ?? 0) > 0) found.push([table, rows.rows[0]!.n]);
  }
  return found;
}

/** JSON log lines at error level (pino: 50) or worse. */
function errorLines(proc: ParleyProcess): string[] {
  return proc.lines.filter((line) => {
    try {
      return (JSON.parse(line) as { level?: number }).level! >= 50;
    } catch {
      return false;
    }
  });
}

describe('deleting a session while its turn runs (PostgreSQL, real processes)', () => {
  it('stops the worker without an error, and nothing of the session is written again', async () => {
    const url = api.url as string;
    const admitted = await request(url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'delete_mid_reply',
      message: words,
    });
    expect(admitted.status).toBe(202);
    const sessionId: string = admitted.body.session_id;
    const stream = await SseClient.open(url, sessionId);
    await stream.waitFor(
      (client) => client.events.filter((event) => event.type === 'text_delta').length >= 3,
      60_000,
    );
    const lease = await db.query<{ lease_token: string | null }>(
      'select lease_token from sessions where session_id = $1',
      [sessionId],
    );
    expect(lease.rows[0]?.lease_token).not.toBeNull();

    const deleted = await request(url, 'DELETE', `/api/v1/chat/sessions/${sessionId}`);
    expect(deleted.status).toBe(204);
    await until(
      () => stream.closed,
      (closed) => closed,
      'the end of the stream',
    );
    await worker.waitForLine(/session deleted; the turn stops/, 60_000);
    expect(stream.events.filter((event) => event.type === 'done')).toEqual([]);

    // The worker is well and takes the next turn; by then it had long given the old one up.
    const next = await request(url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'after_delete',
      message: 'still there?',
    });
    await until(
      () => request(url, 'GET', `/api/v1/chat/sessions/${next.body.session_id}`),
      (found) => found.body.state === 'idle' && found.body.latest_sequence > 2,
      'the next turn',
    );
    expect(await rowsOf(sessionId)).toEqual([]);
    expect(errorLines(worker)).toEqual([]);
    expect(errorLines(api)).toEqual([]);
    expect(worker.exit).toBeNull();
  });

  it('deletes a session whose turn was just admitted, before or while a worker claims it', async () => {
    const url = api.url as string;
    for (let round = 0; round < 5; round++) {
      const admitted = await request(url, 'POST', '/api/v1/chat/turns', {
        turn_id: `delete_at_once_${round}`,
        message: words,
      });
      const deleted = await request(
        url,
        'DELETE',
        `/api/v1/chat/sessions/${admitted.body.session_id}`,
      );
      expect(deleted.status).toBe(204);
      const next = await request(url, 'POST', '/api/v1/chat/turns', {
        turn_id: `after_at_once_${round}`,
        message: 'next',
      });
      await until(
        () => request(url, 'GET', `/api/v1/chat/sessions/${next.body.session_id}`),
        (found) => found.body.state === 'idle' && found.body.latest_sequence > 2,
        'the next turn',
      );
      expect(await rowsOf(admitted.body.session_id)).toEqual([]);
    }
    expect(errorLines(worker)).toEqual([]);
    expect(errorLines(api)).toEqual([]);
  });
});
