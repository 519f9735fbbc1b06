import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, PrivateCluster } from '../scripts/soak/postgres.js';
import type { Db } from '../src/store/db.js';
import type { Config } from '../src/config/types.js';
import { describeStore } from '../src/store/open.js';
import { openPostgres } from '../src/store/postgres.js';
import { isConnectionLoss, parseHosts } from '../src/store/postgresHosts.js';
import { freshStorage } from './support/db.js';
import { startRelay } from './support/relay.js';
import { until } from './support/poll.js';

/**
 * High availability (docs/deployment.md): a multi-host `storage.url`, libpq-style. New
 * connections go to the host that accepts writes; after a switchover (the old primary
 * read-only, its sessions ended, the standby promoted) the pool and the LISTEN connection
 * follow the new primary, and a write that reached the old one fails instead of passing.
 */

describe('multi-host connection strings', () => {
  it('split into one URL per host, keeping credentials, database and other parameters', () => {
    const hosts = parseHosts(
      'postgres://u:p%40ss@h1:5432,h2:5433/db?target_session_attrs=read-write&sslmode=disable',
    );
    expect(hosts.names).toEqual(['h1:5432', 'h2:5433']);
    expect(hosts.attrs).toBe('read-write');
    expect(hosts.urlFor(1)).toBe('postgres://u:p%40ss@h2:5433/db?sslmode=disable');
    expect(parseHosts('postgres://u@h/db').urlFor(0)).toBe('postgres://u@h/db');
    expect(parseHosts('postgres://u@h/db').attrs).toBe('any');
    expect(() => parseHosts('postgres://h1,h2/db?target_session_attrs=standby')).toThrow(
      /storage\.url: target_session_attrs=standby/,
    );
  });

  it('name every listed host, never the credentials, where a process says what it uses', () => {
    const config = (url: string) => ({ storage: { url, dataDir: '' } }) as unknown as Config;
    expect(describeStore(config('postgres://u:secret@h1:5432,h2:5433/db?sslmode=disable'))).toBe(
      'PostgreSQL at h1:5432,h2:5433/db (the host that accepts writes)',
    );
    expect(describeStore(config('postgres://u:secret@h1:5432/db'))).toBe(
      'PostgreSQL at h1:5432/db',
    );
  });

  it('skip a listed host that refuses connections', async () => {
    const fresh = await freshStorage();
    const url = new URL(fresh.storage.url as string);
    const dead = await freePort();
    const multi = `postgres://${url.username}:${url.password}@127.0.0.1:${dead},${url.host}${url.pathname}`;
    const db = await openPostgres(multi, 2);
    try {
      const { rows } = await db.query<{ port: number }>('select inet_server_port() as port');
      expect(rows[0]?.port).toBe(Number(url.port));
    } finally {
      await db.close();
      await fresh.drop();
    }
  });

  it('fail a statement whose server vanishes under it, and carry on', async () => {
    const fresh = await freshStorage();
    const target = new URL(fresh.storage.url as string);
    // A TCP relay in front of the server: cutting it is the server's machine vanishing
    // (the connection closes with no error message from PostgreSQL).
    const relay = await startRelay(target);
    const { sockets } = relay;
    const db = await openPostgres(relay.url, 2);
    try {
      const sleeping = db.query('select pg_sleep(30)');
      sleeping.catch(() => {});
      await until(
        () => sockets.size,
        (count) => count >= 2,
        'the connection through the relay',
      );
      const admin = new pg.Client({ connectionString: target.toString() });
      await admin.connect();
      await until(
        async () =>
          (
            await admin.query(
              `select 1 from pg_stat_activity where query = 'select pg_sleep(30)' and state = 'active'`,
            )
          ).rowCount,
        (count) => count === 1,
        'the statement to run',
      ).finally(() => admin.end());
      // The client sees its socket end mid-statement: the connection's 'error' event must
      // not be an uncaught exception (it would end the process); the statement fails.
      relay.cut();
      await expect(sleeping).rejects.toThrow(/terminated|ECONNRESET/i);
      await expect(db.query('select 1 as one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
    } finally {
      await db.close();
      await relay.close();
      await fresh.drop();
    }
  });

  it('tell a lost or read-only connection from a failed statement', () => {
    expect(isConnectionLoss({ code: '57P01' })).toBe(true);
    expect(isConnectionLoss({ code: '25006' })).toBe(true);
    expect(isConnectionLoss({ code: 'ECONNREFUSED' })).toBe(true);
    expect(isConnectionLoss(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionLoss({ code: '23505' })).toBe(false);
    expect(isConnectionLoss({ code: '57014' })).toBe(false);
  });
});

describe('a switchover between two servers', () => {
  let directory: string;
  let first: PrivateCluster;
  let second: PrivateCluster;
  let multiUrl: string;
  let password: string;
  const admins: pg.Client[] = [];
  let db: Db | null = null;

  async function admin(cluster: PrivateCluster): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: `postgres://parley:${password}@127.0.0.1:${cluster.port}/postgres`,
    });
    client.on('error', () => {});
    await client.connect();
    admins.push(client);
    return client;
  }

  async function setReadOnly(client: pg.Client, readOnly: boolean): Promise<void> {
    await client.query(
      `alter system set default_transaction_read_only = ${readOnly ? 'on' : 'off'}`,
    );
    await client.query('select pg_reload_conf()');
  }

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'parley-switchover-'));
    chmodSync(directory, 0o755);
    const own = (name: string): string => {
      const path = join(directory, name);
      mkdirSync(path, { mode: 0o755 });
      return path;
    };
    [first, second] = await Promise.all([
      PrivateCluster.create(own('a')),
      PrivateCluster.create(own('b')),
    ]);
    // One role, one password on both, as on a replicated pair.
    password = new URL(first.url).password;
    const secondAdmin = new pg.Client({ connectionString: second.url });
    await secondAdmin.connect();
    await secondAdmin.query(`alter role parley password '${password}'`);
    await secondAdmin.end();
    // The second server is listed first: it starts as the read-only one.
    multiUrl = `postgres://parley:${password}@127.0.0.1:${second.port},127.0.0.1:${first.port}/postgres?target_session_attrs=read-write`;
  });
  afterAll(async () => {
    await db?.close();
    for (const client of admins) await client.end().catch(() => {});
    await Promise.all([first?.stop(), second?.stop()]);
    rmSync(directory, { recursive: true, force: true });
  });

  it('moves the pool and the listener to the server that accepts writes', async () => {
    const firstAdmin = await admin(first);
    const secondAdmin = await admin(second);
    for (const client of [firstAdmin, secondAdmin]) {
      await client.query('create table if not exists probe (x int)');
    }
    await setReadOnly(secondAdmin, true);

    db = await openPostgres(multiUrl, 3);
    const portOf = async (): Promise<number> =>
      (await db!.query<{ port: number }>('select inet_server_port() as port')).rows[0]!.port;
    expect(await portOf()).toBe(first.port);
    await db.query('insert into probe values (1)');
    const heard: string[] = [];
    await db.listen('probe_channel', (payload) => heard.push(payload));
    await firstAdmin.query(`notify probe_channel, 'before'`);
    await until(
      () => heard,
      (payloads) => payloads.includes('before'),
      'the notification on the first primary',
    );

    // The switchover: the first server turns read-only, the second takes writes.
    await setReadOnly(firstAdmin, true);
    await setReadOnly(secondAdmin, false);
    // pg_reload_conf only signals the postmaster: each backend takes the new setting a
    // moment later. Wait until the pooled connection (the pool reuses its last idle one)
    // has it, so the write below meets a read-only server rather than racing the reload.
    await until(
      async () =>
        (
          await db!.query<{ v: string }>(
            "select current_setting('default_transaction_read_only') as v",
          )
        ).rows[0]!.v,
      (value) => value === 'on',
      'the pooled connection to see the first server turn read-only',
    );
    // A pooled connection still on the old primary refuses the write: it fails (the
    // caller retries) and the connection is discarded.
    await expect(
      db.transaction(async (tx) => {
        await tx.query('insert into probe values (2)');
      }),
    ).rejects.toMatchObject({ code: '25006' });
    // The old primary's sessions end, as when it is demoted.
    await firstAdmin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
        where usename = 'parley' and pid <> pg_backend_pid() and backend_type = 'client backend'`,
    );
    await until(
      () => portOf().catch(() => 0),
      (port) => port === second.port,
      'new connections on the new primary',
    );
    await db.transaction(async (tx) => {
      await tx.query('insert into probe values (3)');
    });
    const written = await secondAdmin.query<{ x: number }>('select x from probe');
    expect(written.rows).toEqual([{ x: 3 }]);

    // The listener followed: notifications on the new primary arrive.
    await until(
      async () => {
        await secondAdmin.query(`notify probe_channel, 'after'`);
        return heard;
      },
      (payloads) => payloads.includes('after'),
      'the notification on the new primary',
    );
  });
});
