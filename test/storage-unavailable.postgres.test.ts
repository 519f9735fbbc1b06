import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { isStorageUnavailable, NoWritableHostError } from '../src/store/postgresHosts.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { startRelay, type Relay } from './support/relay.js';
import { request } from './support/server.js';

/**
 * While the database cannot be reached (a restart, a failover's window), a request that
 * needs it answers `503 storage_unavailable` with `Retry-After`, writes nothing, and the
 * same request sent again once the database is back succeeds. The database's machine is
 * a TCP relay in front of the test's PostgreSQL: cutting it drops every connection and
 * refuses new ones.
 */
describe('the database unavailable for a while', () => {
  let relay: Relay;
  let target: URL;
  let fresh: Awaited<ReturnType<typeof freshStorage>>;
  let running: Running;
  let url: string;

  beforeAll(async () => {
    fresh = await freshStorage();
    target = new URL(fresh.storage.url as string);
    relay = await startRelay(target);
    const config = testConfig({ ...fresh.storage, url: relay.url });
    running = await startProcess(
      config,
      { api: true, worker: false },
      createLogger({ level: 'silent' }),
      { env: process.env, checkResponses: true },
    );
    url = running.url ?? '';
  });

  afterAll(async () => {
    relay.down = false;
    await running?.stop();
    await relay?.close();
    await fresh?.drop();
  });

  it('answers 503 storage_unavailable with Retry-After, then accepts the same request', async () => {
    const admission = { turn_id: 'while-down', message: 'hello while the database is away' };
    const first = await request(url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'before',
      message: 'hello',
    });
    expect(first.status).toBe(202);

    relay.down = true;
    relay.cut();
    const refused = await request(url, 'POST', '/api/v1/chat/turns', admission);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({
      error: 'storage_unavailable',
      message: 'the database is unavailable; retry shortly',
    });
    expect(refused.headers.get('retry-after')).toBe('1');

    const direct = new pg.Client({ connectionString: target.toString() });
    await direct.connect();
    try {
      const stored = await direct.query(`select 1 from turns where turn_id = 'while-down'`);
      expect(stored.rowCount).toBe(0);
    } finally {
      await direct.end();
    }

    relay.down = false;
    const again = await request(url, 'POST', '/api/v1/chat/turns', admission);
    expect(again.status).toBe(202);
    expect(again.body.turn_id).toBe('while-down');
  });

  it('tells an unreachable database from a failed statement', () => {
    expect(isStorageUnavailable(new NoWritableHostError('no host'))).toBe(true);
    expect(isStorageUnavailable({ code: 'ECONNREFUSED' })).toBe(true);
    expect(isStorageUnavailable({ code: '57P03' })).toBe(true);
    expect(isStorageUnavailable(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isStorageUnavailable({ code: '23505' })).toBe(false);
    expect(isStorageUnavailable(new Error('something else'))).toBe(false);
  });
});
