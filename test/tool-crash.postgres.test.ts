import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { readEvents } from '../src/store/readEvents.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { startParley, stopAllProcesses, type ParleyProcess } from './support/processes.js';
import { request } from './support/server.js';

/**
 * Issue 8: a worker dies (SIGKILL) after the first of three calls of one step returned and
 * while the second runs. The next owner does not run the finished call again, runs the
 * one that never started exactly once, and records the interrupted one as interrupted —
 * or runs it again when its tool is marked `idempotent`. Real processes on PostgreSQL; the
 * tool is `http_fetch`, whose calls the test counts at the server they reach.
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
    // The first request for a slow page hangs until the test lets it go; later ones answer.
    if (path.startsWith('/slow') && count === 1) {
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

async function cluster(): Promise<{
  db: Db;
  api: ParleyProcess;
  worker: ParleyProcess;
  start: () => Promise<ParleyProcess>;
}> {
  const fresh = await freshStorage();
  cleanup.push(() => fresh.drop());
  const fetch = (idempotent: boolean) => ({
    policy: 'allow',
    allow_hosts: [`127.0.0.1:${port}`],
    allow_private: true,
    timeout_ms: 30_000,
    idempotent,
  });
  const options = {
    databaseUrl: fresh.storage.url as string,
    config: {
      runtime: { lease_ttl_ms: 3000, poll_ms: 200 },
      tools: { max_concurrency: 1 },
      agents: {
        default: { tools: { http_fetch: fetch(false) } },
        retrying: { tools: { http_fetch: fetch(true) } },
      },
    },
  };
  const api = await startParley('api', options);
  const worker = await startParley('worker', options);
  const db = await openPostgres(fresh.storage.url as string, 2);
  cleanup.push(() => db.close());
  return { db, api, worker, start: () => startParley('worker', options) };
}

async function crashMidStep(agent: string, tag: string) {
  const { db, api, worker, start } = await cluster();
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;
  const message = [`/fast-${tag}-a`, `/slow-${tag}-b`, `/fast-${tag}-c`]
    .map((path) => `/tool http_fetch {"url": "${url(path)}"}`)
    .join('\n');
  const turnId = `crash_tool_${tag}`;
  const admitted = await request(api.url as string, 'POST', '/api/v1/chat/turns', {
    turn_id: turnId,
    agent,
    message,
  });
  expect(admitted.status).toBe(202);
  const sessionId = admitted.body.session_id as string;
  // One call at a time: the first has returned, the second is running.
  await until(
    () => hits.get(`/slow-${tag}-b`) ?? 0,
    (count) => count === 1,
    'the second call',
  );
  worker.kill('SIGKILL');
  await worker.exited;
  const successor = await start();
  const events = await until(
    () => readEvents(db, sessionId, 0, 10_000),
    (list) => list.some((event) => event.type === 'done'),
    'the turn finished by the next worker',
    60_000,
  );
  expect(successor.pid).not.toBe(worker.pid);
  await checkJournalInvariants(db);
  // Each result by the page its call fetched (results are journaled as calls end).
  const urlOf = new Map(
    (events as any[])
      .filter((event) => event.type === 'tool_call')
      .map((event) => [event.call_id, String(event.arguments.url)]),
  );
  const byPage = (page: string) =>
    (events as any[]).find(
      (event) => event.type === 'tool_result' && urlOf.get(event.call_id)?.includes(page),
    );
  const results = [byPage(`-${tag}-a`), byPage(`-${tag}-b`), byPage(`-${tag}-c`)];
  expect((events as any[]).filter((event) => event.type === 'tool_result')).toHaveLength(3);
  return { results };
}

describe('a worker killed in the middle of a step of three calls', () => {
  it('does not run the finished call again, runs the unstarted one once, and records the interrupted one', async () => {
    const { results } = await crashMidStep('default', 'plain');
    expect(hits.get('/fast-plain-a')).toBe(1);
    expect(hits.get('/slow-plain-b')).toBe(1);
    expect(hits.get('/fast-plain-c')).toBe(1);
    expect(results).toHaveLength(3);
    const [first, second, third] = results;
    expect(first).toMatchObject({ ok: true });
    expect(second).toMatchObject({ ok: false, error: { code: 'interrupted' } });
    expect(third).toMatchObject({ ok: true });
  }, 180_000);

  it('runs the interrupted call again when its tool is idempotent', async () => {
    const { results } = await crashMidStep('retrying', 'again');
    expect(hits.get('/fast-again-a')).toBe(1);
    expect(hits.get('/slow-again-b')).toBe(2);
    expect(hits.get('/fast-again-c')).toBe(1);
    expect(results.map((result: any) => result.ok)).toEqual([true, true, true]);
  }, 180_000);
});
