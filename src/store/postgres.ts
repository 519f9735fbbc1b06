import pg from 'pg';
import type { Db, Queryable, QueryResult, Statement } from './db.js';
import {
  acceptsWrites,
  HostResolver,
  isConnectionLoss,
  NotWritableError,
  parseHosts,
} from './postgresHosts.js';

const INT8 = 20;
const NUMERIC = 1700;

function typeParser(oid: number, format?: string): (value: string) => unknown {
  if (oid === INT8 || oid === NUMERIC) return (value: string) => Number(value);
  return pg.types.getTypeParser(oid, format as 'text');
}

/**
 * Deadlines and connection choices (the `database` keys, docs/reliability.md "Deadlines").
 * 0 turns a deadline off (the server's own setting then applies).
 */
export interface PostgresOptions {
  /** Server-side `statement_timeout` of every pooled connection. */
  statementTimeoutMs?: number;
  /** Server-side `idle_in_transaction_session_timeout`: the server ends such a session. */
  idleInTransactionTimeoutMs?: number;
  /** Establishing one connection: the socket is destroyed past it. */
  connectTimeoutMs?: number;
  /** Named prepared statements (false: every statement is sent as text, for PgBouncer). */
  preparedStatements?: boolean;
  /** Where the LISTEN connection goes (default: `url`), e.g. past a transaction pooler. */
  listenUrl?: string | null;
  /**
   * A pooled connection idle this long is closed (0: never). A closed connection takes
   * its prepared statements and the server's caches with it: the next burst pays them again.
   */
  poolIdleMs?: number;
}

export const defaultPostgresOptions = {
  statementTimeoutMs: 30_000,
  idleInTransactionTimeoutMs: 60_000,
  connectTimeoutMs: 10_000,
  preparedStatements: true,
  listenUrl: null,
  poolIdleMs: 300_000,
} satisfies Required<PostgresOptions>;

/**
 * The production engine: a pool for queries and transactions, plus one dedicated
 * connection per process for LISTEN (RUNTIME.md, "one listening connection per process"),
 * reconnected with backoff if it drops. A lost notification only delays: everyone polls.
 *
 * Deadlines, so that a hung database cannot hold a worker (and the lease its heartbeat
 * keeps renewing) forever: every statement is bounded by `statement_timeout` and a
 * transaction left idle by `idle_in_transaction_session_timeout`, both enforced by the
 * server (the statement is cancelled, the session ended: the call rejects), and each new
 * connection by a connect timeout that destroys its socket. COMMIT is not subject to the
 * statement timeout: PostgreSQL disarms it before the commit itself runs (postgres.c,
 * finish_xact_command), so a commit waiting for a synchronous standby is never cancelled
 * half-way — which would leave it committed locally but perhaps not replicated. The
 * connect timeout is set on each client, not on the pool: waiting for a free pooled
 * connection is bounded by the statements that hold them, not by it.
 *
 * High availability (docs/deployment.md): `url` may list several hosts, libpq-style
 * (postgresHosts.ts). New connections go to the host last found writable; a connection
 * that cannot be made, or reaches a standby, makes the resolver try every host and the
 * caller gets a connection to the new primary. A connection lost mid-statement (the
 * primary died) is discarded and its statement fails: its outcome is in doubt, and the
 * callers' token gates and idempotency keys make their retries safe.
 */
export async function openPostgres(
  url: string,
  poolSize: number,
  options: PostgresOptions = {},
): Promise<Db> {
  const settings = { ...defaultPostgresOptions, ...options };
  const connectTimeoutMs = settings.connectTimeoutMs;
  const deadlines = {
    ...(settings.statementTimeoutMs > 0 ? { statement_timeout: settings.statementTimeoutMs } : {}),
    ...(settings.idleInTransactionTimeoutMs > 0
      ? { idle_in_transaction_session_timeout: settings.idleInTransactionTimeoutMs }
      : {}),
  };
  const resolver = new HostResolver(parseHosts(url), connectTimeoutMs);
  const listenResolver = settings.listenUrl
    ? new HostResolver(parseHosts(settings.listenUrl, 'database.listen_url'), connectTimeoutMs)
    : resolver;
  class DeadlineClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      // Each new connection goes to the host currently believed writable.
      super({
        ...config,
        connectionString: resolver.url,
        connectionTimeoutMillis: connectTimeoutMs,
      });
    }
  }
  const pool = new pg.Pool({
    max: poolSize,
    idleTimeoutMillis: settings.poolIdleMs,
    types: { getTypeParser: typeParser },
    ...deadlines,
    Client: DeadlineClient,
  });
  pool.on('error', () => {
    // An idle client died (server restart); the pool replaces it on next use.
  });
  // Connections checked to reach a writable server (only when target_session_attrs asks).
  const verified = new WeakSet<pg.PoolClient>();

  /**
   * A pooled connection to a writable server, until `release`. Nothing has run on it yet,
   * so a failure here is safe to retry: the resolver looks for the primary among the
   * listed hosts, once per host at most, before the caller sees the error.
   *
   * pg-pool stops listening for a client's errors while it is checked out: the server
   * going away would otherwise be an unhandled 'error' event that kills the process. The
   * error is recorded instead (the failed query rejects as well), and `release` then
   * discards the client. A client that failed a query, or lost its server, is discarded.
   */
  async function acquire(): Promise<{ client: pg.PoolClient; release: (error?: unknown) => void }> {
    for (let attempt = 0; ; attempt++) {
      const client = await pool.connect().catch(async (error: unknown) => {
        if (attempt >= resolver.hosts.names.length || !isConnectionLoss(error)) throw error;
        await resolver.resolve();
        return null;
      });
      if (!client) continue;
      let broken: Error | null = null;
      const onError = (error: Error) => {
        broken = error;
      };
      client.on('error', onError);
      const release = (error?: unknown) => {
        client.off('error', onError);
        const cause = broken ?? error;
        client.release(
          cause === undefined || cause === null
            ? undefined
            : cause instanceof Error
              ? cause
              : new Error('the connection failed'),
        );
      };
      try {
        if (!verified.has(client)) {
          if (!(await acceptsWrites(client, resolver.hosts.attrs))) {
            throw new NotWritableError(`${resolver.name} does not accept writes`);
          }
          verified.add(client);
        }
        return { client, release };
      } catch (error) {
        release(error);
        if (attempt >= resolver.hosts.names.length || !isConnectionLoss(error)) throw error;
        await resolver.resolve();
      }
    }
  }

  try {
    (await acquire()).release();
  } catch (error) {
    await pool.end().catch(() => {});
    throw describeConnectFailure(error, connectTimeoutMs);
  }
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let listenClient: pg.Client | null = null;
  let closed = false;

  async function connectListener(): Promise<void> {
    const client = new pg.Client({
      connectionString: listenResolver.url,
      connectionTimeoutMillis: connectTimeoutMs,
    });
    client.on('notification', (message) => {
      for (const listener of listeners.get(message.channel) ?? []) listener(message.payload ?? '');
    });
    client.on('error', () => {
      if (listenClient === client) listenClient = null;
      void client.end().catch(() => {});
      if (!closed) retryListener();
    });
    try {
      await client.connect();
      // LISTEN is refused during recovery: the listener belongs on the primary.
      if (!(await acceptsWrites(client, listenResolver.hosts.attrs))) {
        throw new NotWritableError(`${listenResolver.name} does not accept writes`);
      }
      for (const channel of listeners.keys()) await client.query(`listen ${quoteIdent(channel)}`);
    } catch (error) {
      await client.end().catch(() => {});
      if (listenResolver.multiple && isConnectionLoss(error)) {
        await listenResolver.resolve().catch(() => {});
      }
      throw error;
    }
    if (closed) {
      await client.end().catch(() => {});
      return;
    }
    listenClient = client;
  }

  let connecting: Promise<void> | null = null;
  function ensureListener(): Promise<void> {
    if (listenClient || closed) return Promise.resolve();
    connecting ??= connectListener().finally(() => {
      connecting = null;
    });
    return connecting;
  }

  // A lost listener is reconnected, every second, until it is back (or the store closes):
  // in the meantime wake-ups come from polling only.
  let retrying = false;
  function retryListener(): void {
    if (retrying || closed) return;
    retrying = true;
    setTimeout(() => {
      retrying = false;
      ensureListener().catch(() => retryListener());
    }, 1000).unref();
  }

  const wrap = (target: pg.Pool | pg.PoolClient): Queryable => ({
    async query<Row>(
      statement: string | Statement,
      params: unknown[] = [],
    ): Promise<QueryResult<Row>> {
      const result =
        typeof statement === 'string'
          ? await target.query(statement, params)
          : settings.preparedStatements
            ? await target.query({ name: statement.name, text: statement.text, values: params })
            : await target.query(statement.text, params);
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
    },
  });

  return {
    engine: 'postgres',
    async query<Row>(statement: string | Statement, params?: unknown[]) {
      const { client, release } = await acquire();
      try {
        const result = await wrap(client).query<Row>(statement, params);
        release();
        return result;
      } catch (error) {
        // As pg-pool's own pool.query does: a connection that failed a query is discarded.
        release(error);
        throw error;
      }
    },
    async transaction(work) {
      const { client, release } = await acquire();
      let failed: unknown = null;
      try {
        await client.query('begin');
        const result = await work(wrap(client));
        await client.query('commit');
        return result;
      } catch (error) {
        // A connection lost or turned read-only by a failover is discarded; another
        // failure rolls back and the connection goes back to the pool.
        if (isConnectionLoss(error)) failed = error;
        else {
          await client.query('rollback').catch((rollbackFailed: unknown) => {
            failed = rollbackFailed;
          });
        }
        throw error;
      } finally {
        release(failed ?? undefined);
      }
    },
    async listen(channel, onPayload) {
      let set = listeners.get(channel);
      const first = !set;
      if (!set) listeners.set(channel, (set = new Set()));
      set.add(onPayload);
      await ensureListener().catch((error: unknown) => {
        retryListener();
        throw error;
      });
      if (first && listenClient) await listenClient.query(`listen ${quoteIdent(channel)}`);
      return async () => {
        set.delete(onPayload);
      };
    },
    async close() {
      closed = true;
      const client = listenClient;
      listenClient = null;
      await client?.end().catch(() => {});
      await pool.end();
    },
  };
}

/** A connection the connect timeout cut says so, naming the key; other failures pass. */
function describeConnectFailure(error: unknown, connectTimeoutMs: number): unknown {
  const message = error instanceof Error ? error.message : '';
  if (connectTimeoutMs > 0 && /timeout/i.test(message) && !/statement/i.test(message)) {
    return new Error(
      `PostgreSQL did not accept a connection within ${connectTimeoutMs} ms ` +
        '(database.connect_timeout_ms)',
    );
  }
  return error;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
