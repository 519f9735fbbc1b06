import pg from 'pg';

/**
 * Multi-host connection strings, as libpq reads them
 * (`postgres://user:pass@h1:5432,h2:5433/db?target_session_attrs=read-write`, what
 * `pg_autoctl show uri` prints). node-postgres takes one host only, so Parley picks the
 * host itself: each host is a single-host URL, and with `target_session_attrs=read-write`
 * (or `primary`) a connection counts only once the server says it is not a standby.
 */
export type SessionAttrs = 'any' | 'read-write' | 'primary';

export interface HostList {
  /** `host:port` of each listed host, in order (for messages: no credentials). */
  readonly names: string[];
  /** The single-host URL of host `index` (target_session_attrs removed). */
  urlFor(index: number): string;
  readonly attrs: SessionAttrs;
}

const acceptedAttrs: readonly string[] = ['any', 'read-write', 'primary'];

/** Splits a PostgreSQL URL into one URL per host; a single-host URL gives a list of one. */
export function parseHosts(url: string, key = 'storage.url'): HostList {
  const match = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(\/[^?#]*)?(\?[^#]*)?(#.*)?$/.exec(
    url,
  );
  if (!match) return { names: ['(unparsed)'], urlFor: () => url, attrs: 'any' };
  const [, scheme = '', credentials = '', hostPart = '', path = '', query = ''] = match;
  const params = new URLSearchParams(query.slice(1));
  const attrs = params.get('target_session_attrs') ?? 'any';
  if (!acceptedAttrs.includes(attrs)) {
    throw new Error(
      `${key}: target_session_attrs=${attrs} is not supported (Parley writes: use read-write, primary or any)`,
    );
  }
  params.delete('target_session_attrs');
  const rest = params.toString();
  const hosts = hostPart.split(',');
  if (hosts.some((host) => host === '') && hosts.length > 1) {
    throw new Error(`${key}: an empty host in the host list`);
  }
  return {
    names: hosts.map((host) => host || 'localhost'),
    urlFor: (index) => `${scheme}${credentials}${hosts[index]}${path}${rest ? `?${rest}` : ''}`,
    attrs: attrs as SessionAttrs,
  };
}

/** Whether the server behind `client` is one Parley may write to, per `attrs`. */
export async function acceptsWrites(
  client: pg.Client | pg.PoolClient,
  attrs: SessionAttrs,
): Promise<boolean> {
  if (attrs === 'any') return true;
  const result = await client.query<{ recovery: boolean; read_only: string }>(
    "select pg_is_in_recovery() as recovery, current_setting('transaction_read_only') as read_only",
  );
  const row = result.rows[0];
  if (!row || row.recovery) return false;
  return attrs === 'primary' || row.read_only === 'off';
}

/** A connection that reached a server Parley may not write to (a standby, say). */
export class NotWritableError extends Error {
  readonly code = 'PARLEY_NOT_WRITABLE';
}

/** Every listed host was tried and none accepts writes (a failover in progress, say). */
export class NoWritableHostError extends Error {
  readonly code = 'PARLEY_NO_WRITABLE_HOST';
}

/**
 * The database cannot be reached or written for now, as opposed to a statement that
 * failed: a lost connection, no writable host, or the pool's wait for a connection timed
 * out. What a request meets during a restart or a failover; it is worth retrying.
 */
export function isStorageUnavailable(error: unknown): boolean {
  if (error instanceof NoWritableHostError || isConnectionLoss(error)) return true;
  const { message } = (error ?? {}) as { message?: unknown };
  return typeof message === 'string' && /timeout exceeded when trying to connect/i.test(message);
}

/**
 * Errors after which a connection is worth nothing: the server went away or restarted
 * (a failover), or it has become read-only (a demoted primary). The connection is then
 * discarded, never handed out again, and the next one re-resolves the host.
 */
export function isConnectionLoss(error: unknown): boolean {
  if (error instanceof NotWritableError) return true;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (code.startsWith('08') || ['57P01', '57P02', '57P03', '25006'].includes(code)) return true;
    if (
      [
        'ECONNREFUSED',
        'ECONNRESET',
        'EPIPE',
        'ETIMEDOUT',
        'EHOSTUNREACH',
        'ENOTFOUND',
        'EAI_AGAIN',
      ].includes(code)
    ) {
      return true;
    }
  }
  return typeof message === 'string' && /Connection terminated|not queryable/i.test(message);
}

/**
 * Which listed host new connections go to: the last one found writable. `resolve()`
 * tries every host in turn (the current one first) with a fresh connection and keeps the
 * first that accepts writes; concurrent callers share one pass.
 */
export class HostResolver {
  private current = 0;
  private resolving: Promise<void> | null = null;

  constructor(
    readonly hosts: HostList,
    private readonly connectTimeoutMs: number,
  ) {}

  get multiple(): boolean {
    return this.hosts.names.length > 1;
  }

  get url(): string {
    return this.hosts.urlFor(this.current);
  }

  get name(): string {
    return this.hosts.names[this.current] ?? '';
  }

  resolve(): Promise<void> {
    this.resolving ??= this.probeAll().finally(() => {
      this.resolving = null;
    });
    return this.resolving;
  }

  private async probeAll(): Promise<void> {
    const count = this.hosts.names.length;
    const failures: string[] = [];
    for (let step = 0; step < count; step++) {
      const index = (this.current + step) % count;
      // The connect and the probe's one query are both bounded: a host that accepts TCP
      // but never answers must not hold up the search for the primary.
      const client = new pg.Client({
        connectionString: this.hosts.urlFor(index),
        connectionTimeoutMillis: this.connectTimeoutMs,
        query_timeout: this.connectTimeoutMs,
      });
      client.on('error', () => {});
      try {
        await client.connect();
        if (await acceptsWrites(client, this.hosts.attrs)) {
          this.current = index;
          return;
        }
        failures.push(`${this.hosts.names[index]}: not writable`);
      } catch (error) {
        failures.push(`${this.hosts.names[index]}: ${describe(error)}`);
      } finally {
        await client.end().catch(() => {});
      }
    }
    throw new NoWritableHostError(`no PostgreSQL host accepts writes (${failures.join('; ')})`);
  }
}

function describe(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return typeof code === 'string' ? code : typeof message === 'string' ? message : 'failed';
}
