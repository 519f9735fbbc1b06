import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A private PostgreSQL cluster for one soak run: `initdb` into the run's temporary
 * directory, `pg_ctl start` on a free loopback port. Restarting it (the chaos does, once)
 * disturbs nothing else on the machine; the test suite's cluster is never touched.
 * PostgreSQL refuses to run as root, so as root every command runs as the `postgres`
 * OS user (`runuser`), which then owns the data directory.
 */
export class PrivateCluster {
  private constructor(
    private readonly bin: string,
    readonly dataDir: string,
    private listening: number,
    private readonly password: string,
    private readonly runAs: string | null,
  ) {}

  /** Creates and starts the cluster, with a `parley` role owning a `parley` database. */
  static async create(directory: string): Promise<PrivateCluster> {
    const bin = postgresBin();
    const runAs = userInfo().uid === 0 ? 'postgres' : null;
    const dataDir = join(directory, 'pgdata');
    mkdirSync(dataDir, { mode: 0o700 });
    const passwordFile = join(directory, 'pgpass');
    const password = randomBytes(12).toString('hex');
    writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
    if (runAs) {
      const { uid, gid } = await postgresIds(runAs);
      chownSync(dataDir, uid, gid);
      chownSync(passwordFile, uid, gid);
    }
    const cluster = new PrivateCluster(bin, dataDir, await freePort(), password, runAs);
    await cluster.command('initdb', [
      '-D',
      dataDir,
      '-U',
      'parley',
      '--pwfile',
      passwordFile,
      '--auth',
      'scram-sha-256',
      '--encoding',
      'UTF8',
      '--no-sync',
    ]);
    await cluster.startOnFreePort();
    return cluster;
  }

  /** The TCP port it listens on. */
  get port(): number {
    return this.listening;
  }

  /**
   * Writes the settings and starts the server. The port was free when it was picked, but
   * another process may bind it before the server does: then a new port, at most twice.
   */
  private async startOnFreePort(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      this.writeSettings();
      try {
        await this.start();
        return;
      } catch (error) {
        const log = readLog(join(this.dataDir, 'server.log'));
        if (attempt >= 3 || !/could not bind|address already in use/i.test(log)) {
          throw new Error(`${(error as Error).message}\nserver.log: ${log.slice(-2000)}`);
        }
        this.listening = await freePort();
      }
    }
  }

  private writeSettings(): void {
    const { dataDir } = this;
    // Loopback TCP only, its socket in its own directory: nothing else can reach it by accident.
    writeFileSync(
      join(dataDir, 'postgresql.auto.conf'),
      [
        `port = ${this.listening}`,
        `listen_addresses = '127.0.0.1'`,
        `unix_socket_directories = '${dataDir}'`,
        'max_connections = 200',
        'fsync = on',
        'log_min_messages = warning',
        '',
      ].join('\n'),
    );
  }

  /** `DATABASE_URL` (the cluster's own `postgres` database; the role's password is made per run). */
  get url(): string {
    return `postgres://parley:${this.password}@127.0.0.1:${this.port}/postgres`;
  }

  /** For printing: no password. */
  get describe(): string {
    return `postgres://parley:***@127.0.0.1:${this.port}/postgres (${this.dataDir})`;
  }

  async start(): Promise<void> {
    await this.pgCtl(['start', '-w', '-t', '60', '-l', join(this.dataDir, 'server.log')]);
  }

  /**
   * `immediate` stops without a checkpoint, like a crash: the restart recovers from the WAL,
   * so every commit acknowledged before it must still be there.
   */
  async restart(mode: 'fast' | 'immediate'): Promise<void> {
    await this.pgCtl([
      'restart',
      '-w',
      '-t',
      '60',
      '-m',
      mode,
      '-l',
      join(this.dataDir, 'server.log'),
    ]);
  }

  async stop(): Promise<void> {
    await this.pgCtl(['stop', '-w', '-t', '60', '-m', 'fast']).catch(() => {});
  }

  private pgCtl(args: string[]): Promise<void> {
    return this.command('pg_ctl', ['-D', this.dataDir, ...args]);
  }

  private async command(program: string, args: string[]): Promise<void> {
    const path = join(this.bin, program);
    const [file, argv] = this.runAs
      ? ['runuser', ['-u', this.runAs, '--', path, ...args]]
      : [path, args];
    try {
      await run(file, argv, { cwd: '/', maxBuffer: 16 * 1024 * 1024 });
    } catch (error) {
      const failed = error as { stderr?: string; stdout?: string; message: string };
      throw new Error(
        `${program} ${args[0] ?? ''} failed: ${failed.stderr || failed.stdout || failed.message}`,
      );
    }
  }
}

/** Debian's layout: /usr/lib/postgresql/<version>/bin; PARLEY_SOAK_PG_BIN overrides it. */
function postgresBin(): string {
  const override = process.env.PARLEY_SOAK_PG_BIN;
  if (override) return override;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
        .sort((a, b) => Number(a) - Number(b))
    : [];
  const newest = versions[versions.length - 1];
  if (!newest) {
    throw new Error(
      'no PostgreSQL server binaries found under /usr/lib/postgresql (apt-get install postgresql), and PARLEY_SOAK_PG_BIN is not set',
    );
  }
  return join(root, newest, 'bin');
}

async function postgresIds(user: string): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([
    run('id', ['-u', user]).then((result) => Number(result.stdout.trim())),
    run('id', ['-g', user]).then((result) => Number(result.stdout.trim())),
  ]);
  return { uid, gid };
}

/** A port nobody listens on right now (the kernel's pick for port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A server log's text, or '' when there is none (yet). */
function readLog(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
