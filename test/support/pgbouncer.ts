import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/soak/postgres.js';

/** Debian's PgBouncer (apt-get install pgbouncer; .ci/run installs it). */
export const pgbouncerBinary = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) =>
  existsSync(path),
);

export interface Bouncer {
  port: number;
  /** The admin console (`SHOW STATS`), for the URL's user. */
  consoleUrl: string;
  /** `url` with its host and port replaced by the bouncer's. */
  urlFor(url: string): string;
  stop(): Promise<void>;
}

/**
 * A PgBouncer in transaction pooling mode on a free loopback port, in front of the server
 * `url` points at, for that URL's user and password. PgBouncer will not run as root: as
 * root it runs as the `postgres` OS user. The deadlines Parley sends as start-up
 * parameters are ignored by it (docs/deployment.md: set them on the role instead).
 */
export async function startBouncer(url: string): Promise<Bouncer> {
  if (!pgbouncerBinary) throw new Error('pgbouncer is not installed');
  const target = new URL(url);
  const directory = mkdtempSync(join(tmpdir(), 'parley-bouncer-'));
  const ids = userInfo().uid === 0 ? postgresIds() : null;
  if (ids) chownSync(directory, ids.uid, ids.gid);
  const port = await freePort();
  const user = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  writeFileSync(join(directory, 'userlist.txt'), `"${user}" "${password}"\n`, { mode: 0o600 });
  writeFileSync(
    join(directory, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${join(directory, 'userlist.txt')}`,
      'pool_mode = transaction',
      `admin_users = ${user}`,
      'max_client_conn = 200',
      'default_pool_size = 10',
      'ignore_startup_parameters = extra_float_digits,statement_timeout,idle_in_transaction_session_timeout',
      `logfile = ${join(directory, 'pgbouncer.log')}`,
      `pidfile = ${join(directory, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  if (ids) {
    for (const name of ['userlist.txt', 'pgbouncer.ini']) {
      chownSync(join(directory, name), ids.uid, ids.gid);
    }
  }
  const child: ChildProcess = spawn(pgbouncerBinary, [join(directory, 'pgbouncer.ini')], {
    stdio: 'ignore',
    ...(ids ?? {}),
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 20_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const logged = existsSync(join(directory, 'pgbouncer.log'))
        ? readFileSync(join(directory, 'pgbouncer.log'), 'utf8')
        : '';
      rmSync(directory, { recursive: true, force: true });
      throw new Error(`pgbouncer did not start: ${logged}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    port,
    consoleUrl: `postgres://${target.username}:${target.password}@127.0.0.1:${port}/pgbouncer`,
    urlFor(other) {
      const through = new URL(other);
      through.hostname = '127.0.0.1';
      through.port = String(port);
      return through.toString();
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function postgresIds(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (!line) throw new Error('no postgres OS user to run pgbouncer as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}
