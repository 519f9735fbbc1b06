import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrivateCluster } from '../scripts/soak/postgres.js';
import { compileConfig } from '../src/config/load.js';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { freshStorage } from './support/db.js';
import { until } from './support/poll.js';

/**
 * PostgreSQL deadlines (`database.*`, docs/reliability.md "Deadlines"): a statement that
 * runs too long is cancelled by the server, a transaction left idle is ended, a server
 * that accepts a connection but never answers fails the connect — and a COMMIT waiting for
 * a synchronous standby is never cut short by the statement timeout.
 */

let url: string;
let drop: () => Promise<void>;
const opened: Db[] = [];

beforeAll(async () => {
  const fresh = await freshStorage();
  url = fresh.storage.url as string;
  drop = fresh.drop;
});
afterAll(async () => {
  for (const db of opened) await db.close();
  await drop();
});

async function open(options: Parameters<typeof openPostgres>[2]): Promise<Db> {
  const db = await openPostgres(url, 2, options);
  opened.push(db);
  return db;
}

async function backendAlive(pid: number): Promise<boolean> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const found = await admin.query('select 1 from pg_stat_activity where pid = $1', [pid]);
    return (found.rowCount ?? 0) > 0;
  } finally {
    await admin.end();
  }
}

describe('database deadlines', () => {
  it('are configuration with documented defaults', () => {
    expect(compileConfig({}).database).toEqual({
      statementTimeoutMs: 30_000,
      idleInTransactionTimeoutMs: 60_000,
      connectTimeoutMs: 10_000,
      preparedStatements: true,
      listenUrl: null,
      poolIdleMs: 300_000,
    });
    expect(() => compileConfig({ database: { statement_timeout_ms: -1 } })).toThrow(
      /database\.statement_timeout_ms/,
    );
  });

  it('cancel a statement that runs past statement_timeout_ms, in or out of a transaction', async () => {
    const db = await open({ statementTimeoutMs: 300 });
    await expect(db.query('select pg_sleep(0.01)')).resolves.toMatchObject({ rowCount: 1 });
    await expect(db.query('select pg_sleep(30)')).rejects.toMatchObject({
      code: '57014',
      message: expect.stringContaining('statement timeout'),
    });
    await expect(
      db.transaction(async (tx) => {
        await tx.query('create temporary table deadline_probe (x int)');
        await tx.query('select pg_sleep(30)');
      }),
    ).rejects.toMatchObject({ code: '57014' });
    // The pool's connections are still usable afterwards.
    await expect(db.query('select 1 as one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
  });

  it('end a session left idle in a transaction past idle_in_transaction_timeout_ms', async () => {
    const db = await open({ idleInTransactionTimeoutMs: 300 });
    const outcome = db.transaction(async (tx) => {
      const { rows } = await tx.query<{ pid: number }>('select pg_backend_pid() as pid');
      const pid = rows[0]?.pid as number;
      // Idle inside the open transaction until the server has ended this session.
      await until(
        () => backendAlive(pid),
        (alive) => !alive,
        'the server to end the session',
      );
      await tx.query('select 1');
    });
    await expect(outcome).rejects.toThrow(/terminat|idle-in-transaction|Connection/i);
    await expect(db.query('select 1 as one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
  });

  it('give up a connect to a server that accepts but never answers', async () => {
    const sockets: Socket[] = [];
    const closed: Socket[] = [];
    const silent: Server = createServer((socket) => {
      sockets.push(socket);
      socket.on('close', () => closed.push(socket));
      socket.on('error', () => {});
      // Reads (and drops) the start-up message, so the client's close is seen.
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    try {
      await expect(
        openPostgres(`postgres://parley:parley@127.0.0.1:${port}/parley`, 1, {
          connectTimeoutMs: 300,
        }),
      ).rejects.toThrow(/within 300 ms \(database\.connect_timeout_ms\)/);
      expect(sockets.length).toBeGreaterThan(0);
      // The client closed its socket: nothing is left waiting on the silent server.
      await until(
        () => closed.length,
        (count) => count === sockets.length,
        'the sockets to close',
      );
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('LISTEN on listen_url when it is set', async () => {
    const listenUrl = new URL(url);
    listenUrl.searchParams.set('application_name', 'parley_listen_probe');
    const db = await open({ listenUrl: listenUrl.toString() });
    await db.listen('parley_probe_channel', () => {});
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ query: string }>(
        `select query from pg_stat_activity where application_name = 'parley_listen_probe'`,
      );
      expect(rows.map((row) => row.query)).toEqual(['listen "parley_probe_channel"']);
    } finally {
      await admin.end();
    }
  });

  it('close a pooled connection left idle past pool_idle_ms', async () => {
    const db = await open({ poolIdleMs: 200 });
    const { rows } = await db.query<{ pid: number }>('select pg_backend_pid() as pid');
    const pid = rows[0]?.pid as number;
    expect(await backendAlive(pid)).toBe(true);
    await until(
      () => backendAlive(pid),
      (alive) => !alive,
      'the idle connection closed',
      // Well before pg-pool's own default (10 s).
      5_000,
    );
    await expect(db.query('select 1 as one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
  });

  it('send every statement as text with prepared_statements: false', async () => {
    const db = await open({ preparedStatements: false });
    const statement = { name: 'deadline_probe_statement', text: 'select $1::int as value' };
    await expect(db.query(statement, [7])).resolves.toMatchObject({ rows: [{ value: 7 }] });
    const prepared = await db.query<{ count: number }>(
      'select count(*)::int as count from pg_prepared_statements where name = $1',
      [statement.name],
    );
    expect(prepared.rows[0]?.count).toBe(0);
  });
});

describe('COMMIT and a synchronous standby', () => {
  let directory: string;
  let cluster: PrivateCluster;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'parley-syncrep-'));
    // As root the cluster runs as the `postgres` user, which must reach its directory.
    chmodSync(directory, 0o755);
    cluster = await PrivateCluster.create(directory);
    // A standby that never connects: every commit waits for it, forever.
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query(`alter system set synchronous_standby_names = 'parley_ghost_standby'`);
    await admin.query('select pg_reload_conf()');
    await admin.end();
  });
  afterAll(async () => {
    await cluster?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('is not cut short by statement_timeout_ms: it waits for the standby', async () => {
    const db = await openPostgres(cluster.url, 2, { statementTimeoutMs: 200 });
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    try {
      let settled = false;
      const committed = db
        .transaction(async (tx) => {
          await tx.query('create table if not exists syncrep_probe (x int)');
          await tx.query('insert into syncrep_probe values (1)');
        })
        .finally(() => {
          settled = true;
        });
      // The COMMIT has waited for the standby for five times the statement timeout and
      // is still waiting: the timeout did not cancel it (which would have ended the wait
      // with the commit done locally but not replicated).
      const waiting = await until(
        async () => {
          const { rows } = await admin.query<{ pid: number }>(
            `select pid from pg_stat_activity
              where wait_event = 'SyncRep' and now() - query_start > interval '1 second'`,
          );
          return rows;
        },
        (rows) => rows.length > 0 || settled,
        'a COMMIT waiting for the standby',
      );
      expect(settled).toBe(false);
      expect(waiting).toHaveLength(1);
      // Only an explicit cancel ends the wait (PostgreSQL then warns that the commit is
      // local only); the transaction resolves.
      await admin.query('select pg_cancel_backend($1)', [waiting[0]?.pid]);
      await committed;
    } finally {
      await admin.end();
      await db.close();
    }
  });
});
