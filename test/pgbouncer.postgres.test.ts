import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { freshStorage } from './support/db.js';
import { allTurnsFinished, checkJournalInvariants } from './support/invariants.js';
import { pgbouncerBinary, startBouncer, type Bouncer } from './support/pgbouncer.js';
import { waitUntil } from './support/runtime-helpers.js';
import { request } from './support/server.js';
import { testConfig } from './support/config.js';

/**
 * Parley behind PgBouncer 1.18 in transaction pooling mode (docs/deployment.md): every
 * statement as text (`database.prepared_statements: false`, PgBouncer 1.18 keeps no
 * prepared statements across transactions) and LISTEN on a direct connection
 * (`database.listen_url`). Turns are admitted, retried and completed through it.
 * .ci/run installs pgbouncer; only a machine without the binary skips this file.
 */
describe.skipIf(!pgbouncerBinary)('behind PgBouncer in transaction mode', () => {
  let bouncer: Bouncer;
  let running: Running;
  let url: string;
  let drop: () => Promise<void>;
  let database: string;

  beforeAll(async () => {
    const fresh = await freshStorage();
    drop = fresh.drop;
    const direct = fresh.storage.url as string;
    database = new URL(direct).pathname.slice(1);
    bouncer = await startBouncer(direct);
    const config = testConfig(
      { url: bouncer.urlFor(direct), dataDir: fresh.storage.dataDir },
      { database: { prepared_statements: false, listen_url: direct } },
    );
    running = await startProcess(
      config,
      { api: true, worker: true },
      createLogger({ level: 'silent' }),
      { env: process.env, checkResponses: true },
    );
    url = running.url ?? '';
  });
  afterAll(async () => {
    await running?.stop();
    await bouncer?.stop();
    await drop?.();
  });

  async function transactionsThroughBouncer(): Promise<number> {
    const console = new pg.Client({ connectionString: bouncer.consoleUrl });
    await console.connect();
    try {
      const { rows } = await console.query<{ database: string; total_xact_count: string }>(
        'show stats',
      );
      return Number(rows.find((row) => row.database === database)?.total_xact_count ?? 0);
    } finally {
      await console.end();
    }
  }

  it('admits, retries and completes turns', async () => {
    const before = await transactionsThroughBouncer();
    const sessions: string[] = [];
    for (let index = 0; index < 6; index++) {
      const body: Record<string, unknown> = {
        turn_id: `bouncer_${index}`,
        message: `hello ${index}`,
      };
      if (index % 2 === 1) body.session_id = sessions[sessions.length - 1];
      const first = await request(url, 'POST', '/api/v1/chat/turns', body);
      expect(first.status).toBe(202);
      // A retry with the same turn_id gets the same answer and writes nothing more.
      const again = await request(url, 'POST', '/api/v1/chat/turns', body);
      expect(again.status).toBe(202);
      expect(again.body).toEqual(first.body);
      if (index % 2 === 0) sessions.push(first.body.session_id);
    }
    await waitUntil(() => allTurnsFinished(running.db), 'every turn to finish');
    const done = await running.db.query<{ count: number }>(
      `select count(*)::int as count from turns where state = 'done'`,
    );
    expect(done.rows[0]?.count).toBe(6);
    await checkJournalInvariants(running.db);
    // The journal writes went through PgBouncer, not around it.
    expect((await transactionsThroughBouncer()) - before).toBeGreaterThan(6);
  });
});
