import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../soak/postgres.js';

const run = promisify(execFile);

export interface FormationNode {
  name: string;
  port: number;
  pgdata: string;
  keeper: ChildProcess | null;
}

/**
 * A private pg_auto_failover formation on loopback ports (Debian's
 * postgresql-15-auto-failover and pg-auto-failover-cli): one monitor and two data nodes,
 * the standby synchronous (pg_auto_failover's default with one standby whose
 * replication-quorum is true: `synchronous_standby_names = 'ANY 1 (...)'`). Every
 * `pg_autoctl run` is a child of this process (as the `postgres` OS user when run as
 * root), so that it can be SIGKILLed by process id, with its PostgreSQL: the loss of a
 * machine. Trust authentication, loopback only.
 */
export class Formation {
  readonly nodes: FormationNode[] = [];
  private monitorKeeper: ChildProcess | null = null;
  private monitorPort = 0;
  private readonly ids: { uid: number; gid: number } | null;
  private readonly env: Record<string, string>;

  constructor(
    private readonly directory: string,
    private readonly log: (line: string) => void,
  ) {
    this.ids = userInfo().uid === 0 ? postgresIds() : null;
    const home = join(directory, 'home');
    for (const path of [home, ...['config', 'data', 'run'].map((name) => join(home, name))]) {
      mkdirSync(path, { recursive: true, mode: 0o700 });
      if (this.ids) chownSync(path, this.ids.uid, this.ids.gid);
    }
    this.env = {
      PATH: `${postgresBin()}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: home,
      XDG_CONFIG_HOME: join(home, 'config'),
      XDG_DATA_HOME: join(home, 'data'),
      XDG_RUNTIME_DIR: join(home, 'run'),
    };
  }

  get monitorUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.monitorPort}/pg_auto_failover`;
  }

  /** The libpq-style URL listing both nodes, as `pg_autoctl show uri` prints it (no TLS). */
  get formationUrl(): string {
    const hosts = this.nodes.map((node) => `127.0.0.1:${node.port}`).join(',');
    return `postgres://postgres@${hosts}/parley?target_session_attrs=read-write`;
  }

  nodeUrl(node: FormationNode): string {
    return `postgres://postgres@127.0.0.1:${node.port}/parley`;
  }

  async create(): Promise<void> {
    this.monitorPort = await freePort();
    const monitorData = join(this.directory, 'monitor');
    await this.autoctl([
      'create',
      'monitor',
      '--pgdata',
      monitorData,
      '--pgport',
      String(this.monitorPort),
      '--hostname',
      '127.0.0.1',
      '--auth',
      'trust',
      '--no-ssl',
    ]);
    await this.autoctl([
      'config',
      'set',
      '--pgdata',
      monitorData,
      'postgresql.listen_addresses',
      '127.0.0.1',
    ]);
    this.monitorKeeper = this.spawnKeeper('monitor', monitorData);
    await this.until(async () => {
      const client = new pg.Client({ connectionString: this.monitorUrl });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('select 1');
        return true;
      } finally {
        await client.end().catch(() => {});
      }
    }, 'the monitor');
    const monitorConnection = `postgres://autoctl_node@127.0.0.1:${this.monitorPort}/pg_auto_failover?sslmode=disable`;
    for (const name of ['node1', 'node2']) {
      const node: FormationNode = {
        name,
        port: await freePort(),
        pgdata: join(this.directory, name),
        keeper: null,
      };
      await this.autoctl([
        'create',
        'postgres',
        '--pgdata',
        node.pgdata,
        '--pgport',
        String(node.port),
        '--hostname',
        '127.0.0.1',
        '--listen',
        '127.0.0.1',
        '--name',
        name,
        '--dbname',
        'parley',
        '--monitor',
        monitorConnection,
        '--auth',
        'trust',
        '--no-ssl',
      ]);
      node.keeper = this.spawnKeeper(name, node.pgdata);
      this.nodes.push(node);
      const wanted = name === 'node1' ? ['single'] : ['secondary'];
      await this.until(
        async () => wanted.includes((await this.states()).get(name) ?? ''),
        `${name} to reach ${wanted.join('/')}`,
      );
    }
    await this.until(
      async () => (await this.states()).get('node1') === 'primary',
      'node1 to be primary with a synchronous standby',
    );
  }

  /** Node name → the state it reported to the monitor. */
  async states(): Promise<Map<string, string>> {
    const client = new pg.Client({ connectionString: this.monitorUrl });
    client.on('error', () => {});
    try {
      await client.connect();
      const { rows } = await client.query<{ nodename: string; reportedstate: string }>(
        'select nodename, reportedstate::text from pgautofailover.node',
      );
      return new Map(rows.map((row) => [row.nodename, row.reportedstate]));
    } catch {
      return new Map();
    } finally {
      await client.end().catch(() => {});
    }
  }

  /** `synchronous_standby_names` on `node` (the monitor sets it). */
  async synchronousStandbys(node: FormationNode): Promise<string> {
    const client = new pg.Client({ connectionString: this.nodeUrl(node) });
    await client.connect();
    try {
      const { rows } = await client.query<{ value: string }>(
        `select current_setting('synchronous_standby_names') as value`,
      );
      return rows[0]?.value ?? '';
    } finally {
      await client.end();
    }
  }

  async primary(): Promise<FormationNode> {
    const states = await this.states();
    const found = this.nodes.find((node) => states.get(node.name) === 'primary');
    if (!found) throw new Error(`no primary: ${JSON.stringify([...states])}`);
    return found;
  }

  /**
   * The loss of a machine: SIGKILL the node's `pg_autoctl run` and every process below
   * it (its PostgreSQL server and backends), found by parent process id.
   */
  killNode(node: FormationNode): number[] {
    const root = node.keeper?.pid;
    if (!root) return [];
    const victims = [root, ...descendants(root)];
    for (const pid of victims) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    node.keeper = null;
    return victims;
  }

  /** Stops every keeper still running (each stops its PostgreSQL), then what is left. */
  async stop(): Promise<void> {
    const keepers = [...this.nodes.map((node) => node.keeper), this.monitorKeeper].filter(
      (keeper): keeper is ChildProcess => keeper !== null && keeper.exitCode === null,
    );
    for (const keeper of keepers) {
      const pids = keeper.pid ? [keeper.pid, ...descendants(keeper.pid)] : [];
      const exited = new Promise((resolve) => keeper.once('exit', resolve));
      keeper.kill('SIGTERM');
      const stopped = await Promise.race([
        exited.then(() => true),
        new Promise((resolve) => setTimeout(() => resolve(false), 30_000)),
      ]);
      if (!stopped) {
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Already gone.
          }
        }
      }
    }
  }

  private spawnKeeper(name: string, pgdata: string): ChildProcess {
    const logFile = openSync(join(this.directory, `${name}.log`), 'a');
    const child = spawn('pg_autoctl', ['run', '--pgdata', pgdata], {
      cwd: this.directory,
      env: this.env,
      stdio: ['ignore', logFile, logFile],
      ...(this.ids ?? {}),
    });
    child.on('error', (error) => this.log(`${name}: ${error.message}`));
    return child;
  }

  private async autoctl(args: string[]): Promise<void> {
    try {
      await run('pg_autoctl', args, {
        cwd: this.directory,
        env: this.env,
        maxBuffer: 16 * 1024 * 1024,
        ...(this.ids ?? {}),
      });
    } catch (error) {
      const failed = error as { stderr?: string; message: string };
      throw new Error(`pg_autoctl ${args.slice(0, 2).join(' ')} failed: ${failed.stderr ?? ''}`);
    }
  }

  private async until(probe: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 180_000;
    for (;;) {
      if (await probe().catch(() => false)) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** Every process below `root`, from /proc (parent ids). */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(parent) ?? [];
      list.push(Number(entry));
      children.set(parent, list);
    } catch {
      // The process ended meanwhile.
    }
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

export function postgresIds(): { uid: number; gid: number } {
  const passwd = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((line) => line.startsWith('postgres:'));
  if (!passwd) throw new Error('no postgres OS user (apt-get install postgresql)');
  const [, , uid, gid] = passwd.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root).filter((name) => existsSync(join(root, name, 'bin', 'pg_ctl')))
    : [];
  const newest = versions.sort((a, b) => Number(a) - Number(b)).pop();
  if (!newest)
    throw new Error('no PostgreSQL under /usr/lib/postgresql (apt-get install postgresql)');
  return join(root, newest, 'bin');
}
