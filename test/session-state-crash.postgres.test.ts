import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../src/store/postgres.js';
import { readEvents } from '../src/store/readEvents.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { startParley, stopAllProcesses } from './support/processes.js';
import { request } from './support/server.js';

/**
 * Sessions with state survive a worker's death (docs/governance.md): a worker is killed
 * (SIGKILL) after the turn's `update_state` returned and while its next call runs. The
 * change was only buffered with the burst: nothing was written at the kill, and the next
 * owner, finishing the turn, applies it once with its commit (one `state_changed`, the
 * tool not run again). Real processes on PostgreSQL.
 */

let site: Server;
let port = 0;
let hits = 0;
let holding: ServerResponse[] = [];

beforeAll(async () => {
  site = createServer((_incoming, response) => {
    hits += 1;
    // The first request hangs until the worker dies; later ones answer.
    if (hits === 1) {
      holding.push(response);
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end('page');
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

describe('a worker killed after update_state ran and before the commit', () => {
  it('writes nothing at the kill, and the next owner applies the change once', async () => {
    const fresh = await freshStorage();
    cleanup.push(() => fresh.drop());
    const options = {
      databaseUrl: fresh.storage.url as string,
      config: {
        runtime: { lease_ttl_ms: 3000, poll_ms: 200 },
        tools: { max_concurrency: 1 },
        agents: {
          default: {
            tools: {
              http_fetch: {
                policy: 'allow',
                allow_hosts: [`127.0.0.1:${port}`],
                allow_private: true,
                timeout_ms: 30_000,
              },
            },
            state: {
              schema: { type: 'object', properties: { step: { type: 'integer' } } },
              initial: { step: 0 },
            },
          },
        },
      },
    };
    const api = await startParley('api', options);
    const worker = await startParley('worker', options);
    const db = await openPostgres(fresh.storage.url as string, 2);
    cleanup.push(() => db.close());

    const message = [
      '/tool update_state {"set": {"step": 1}, "result": "half"}',
      `/tool http_fetch {"url": "http://127.0.0.1:${port}/slow"}`,
    ].join('\n');
    const admitted = await request(api.url as string, 'POST', '/api/v1/chat/turns', {
      turn_id: 'crash_state',
      message,
    });
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id as string;
    await until(
      () => hits,
      (count) => count === 1,
      'the call after update_state',
    );
    worker.kill('SIGKILL');
    await worker.exited;
    const row = async () =>
      (
        await db.query<{ data: unknown; result: unknown }>(
          'select data, result from sessions where session_id = $1',
          [sessionId],
        )
      ).rows[0];
    expect(await row()).toEqual({ data: null, result: null });

    await startParley('worker', options);
    const events = await until(
      () => readEvents(db, sessionId, 0, 10_000),
      (list) => list.some((event) => event.type === 'done'),
      'the turn finished by the next worker',
      60_000,
    );
    await checkJournalInvariants(db);
    const all = events as { type: string; tool?: string }[];
    expect(all.filter((event) => event.type === 'state_changed')).toEqual([
      expect.objectContaining({ data: { step: 1 }, result: 'half', by: 'tool' }),
    ]);
    expect(
      all.filter((event) => event.type === 'tool_result' && event.tool === 'update_state'),
    ).toHaveLength(1);
    expect(await row()).toEqual({ data: { step: 1 }, result: 'half' });
  }, 180_000);
});
