import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { readEvents } from '../src/store/readEvents.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { startParley, stopAllProcesses } from './support/processes.js';
import { request } from './support/server.js';

/**
 * Reconciliation under SIGKILL (docs/governance.md, "Interruptions"): a worker dies while
 * a non-idempotent call (`http_fetch`, `on_unknown: ask`) is in flight; the next worker
 * asks a person whether it took effect, and the page the call reaches counts how often it
 * ran: once when the answer is "it happened", twice when it is "it did not".
 */

let site: Server;
let port = 0;
const hits = new Map<string, number>();
let holding: ServerResponse[] = [];

beforeAll(async () => {
  site = createServer((incoming, response) => {
    const path = new URL(incoming.url ?? '/', 'http://x').pathname;
    const count = (hits.get(path) ?? 0) + 1;
    hits.set(path, count);
    // The first request hangs until the worker dies; a second one answers.
    if (count === 1) {
      holding.push(response);
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(`page ${path} #${count}`);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  port = (site.address() as AddressInfo).port;
});
afterAll(async () => {
  site.closeAllConnections();
  await new Promise<void>((resolve) => site.close(() => resolve()));
});

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const response of holding) response.destroy();
  holding = [];
  await stopAllProcesses();
  for (const clean of cleanup.splice(0).reverse()) await clean();
});

async function crashThenAnswer(tag: string, approved: boolean) {
  const fresh = await freshStorage();
  cleanup.push(() => fresh.drop());
  const options = {
    databaseUrl: fresh.storage.url as string,
    config: {
      runtime: { lease_ttl_ms: 3000, poll_ms: 200 },
      agents: {
        default: {
          tools: {
            http_fetch: {
              policy: 'allow',
              allow_hosts: [`127.0.0.1:${port}`],
              allow_private: true,
              timeout_ms: 30_000,
              on_unknown: 'ask',
            },
          },
        },
      },
    },
  };
  const api = await startParley('api', options);
  const worker = await startParley('worker', options);
  const db: Db = await openPostgres(fresh.storage.url as string, 2);
  cleanup.push(() => db.close());

  const page = `/charge-${tag}`;
  const turnId = `reconcile_${tag}`;
  const admitted = await request(api.url as string, 'POST', '/api/v1/chat/turns', {
    turn_id: turnId,
    message: `/tool http_fetch {"url": "http://127.0.0.1:${port}${page}"}`,
  });
  expect(admitted.status).toBe(202);
  const sessionId = admitted.body.session_id as string;
  // The call reached the page (its effect happened) and waits for its answer: kill now.
  await until(
    () => hits.get(page) ?? 0,
    (count) => count === 1,
    'the call in flight',
  );
  worker.kill('SIGKILL');
  await worker.exited;
  const successor = await startParley('worker', options);
  expect(successor.pid).not.toBe(worker.pid);

  const waiting = await until(
    () => readEvents(db, sessionId, 0, 10_000),
    (list) => list.some((event) => event.type === 'input_required'),
    'the reconciliation request',
    60_000,
  );
  const required = (waiting as any[]).find((event) => event.type === 'input_required');
  expect(required).toMatchObject({
    kind: 'reconciliation',
    tool: 'http_fetch',
    prompt: 'Did this call take effect?',
  });
  // Nothing ran again while the question waits.
  expect(hits.get(page)).toBe(1);
  const answered = await request(
    api.url as string,
    'POST',
    `/api/v1/chat/sessions/${sessionId}/inputs/${required.request_id}`,
    { expected_sequence: required.sequence, approved },
  );
  expect(answered.status).toBe(200);
  const events = await until(
    () => readEvents(db, sessionId, 0, 10_000),
    (list) => list.some((event) => event.type === 'done'),
    'the turn finished',
    60_000,
  );
  await checkJournalInvariants(db);
  const results = (events as any[]).filter((event) => event.type === 'tool_result');
  expect(results).toHaveLength(1);
  expect(results[0].call_id).toBe(required.call_id);
  expect((events as any[]).filter((event) => event.type === 'input_required')).toHaveLength(1);
  return { page, result: results[0] };
}

describe('a worker killed inside a non-idempotent call, on_unknown: ask', () => {
  it('asks whether it happened; "yes" does not run it again', async () => {
    const { page, result } = await crashThenAnswer('yes', true);
    expect(hits.get(page)).toBe(1);
    expect(result).toMatchObject({ ok: true, result: { took_effect: true, result: null } });
  }, 180_000);

  it('"no" runs it again, once, as a fresh call', async () => {
    const { page, result } = await crashThenAnswer('no', false);
    expect(hits.get(page)).toBe(2);
    expect(result).toMatchObject({ ok: true });
    expect(JSON.stringify(result.result)).toContain(`page ${page} #2`);
  }, 180_000);
});
