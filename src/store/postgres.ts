import pg from 'pg';
import type { Db, Queryable, QueryResult, Statement } from './db.js';

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
}

export const defaultPostgresOptions = {
  statementTimeoutMs: 30_000,
  idleInTransactionTimeoutMs: 60_000,
  connectTimeoutMs: 10_000,
  preparedStatements: true,
  listenUrl: null,
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
  class DeadlineClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectTimeoutMs });
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types: { getTypeParser: typeParser },
    ...deadlines,
    Client: DeadlineClient,
  });
  pool.on('error', () => {
    // An idle client died (server restart); the pool replaces it on next use.
  });
  try {
    await pool.query('select 1');
  } catch (error) {
    await pool.end().catch(() => {});
    throw describeConnectFailure(error, connectTimeoutMs);
  }
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let listenClient: pg.Client | null = null;
  let closed = false;

  async function connectListener(): Promise<void> {
    const client = new pg.Client({
      connectionString: settings.listenUrl ?? url,
      connectionTimeoutMillis: connectTimeoutMs,
    });
    client.on('notification', (message) => {
      for (const listener of listeners.get(message.channel) ?? []) listener(message.payload ?? '');
    });
    client.on('error', () => {
      if (listenClient === client) listenClient = null;
      void client.end().catch(() => {});
      if (!closed) setTimeout(() => void ensureListener().catch(() => {}), 1000).unref();
    });
    await client.connect();
    for (const channel of listeners.keys()) await client.query(`listen ${quoteIdent(channel)}`);
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
  const root = wrap(pool);

  return {
    engine: 'postgres',
    query: <Row>(statement: string | Statement, params?: unknown[]) =>
      root.query<Row>(statement, params),
    async transaction(work) {
      const client = await pool.connect();
      // pg-pool stops listening for a client's errors while it is checked out: a server
      // restart mid-transaction would otherwise be an unhandled 'error' event that kills
      // the process. The failed query rejects as well; the client is then discarded.
      let broken: Error | null = null;
      const onError = (error: Error) => {
        broken = error;
      };
      client.on('error', onError);
      try {
        await client.query('begin');
        const result = await work(wrap(client));
        await client.query('commit');
        return result;
      } catch (error) {
        if (!broken) {
          await client.query('rollback').catch((failed: unknown) => {
            broken = failed instanceof Error ? failed : new Error(String(failed));
          });
        }
        throw error;
      } finally {
        client.off('error', onError);
        client.release(broken ?? undefined);
      }
    },
    async listen(channel, onPayload) {
      let set = listeners.get(channel);
      const first = !set;
      if (!set) listeners.set(channel, (set = new Set()));
      set.add(onPayload);
      await ensureListener();
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
