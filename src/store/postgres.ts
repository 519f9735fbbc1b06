import pg from 'pg';
import type { Db, Queryable, QueryResult, Statement } from './db.js';

const INT8 = 20;
const NUMERIC = 1700;

function typeParser(oid: number, format?: string): (value: string) => unknown {
  if (oid === INT8 || oid === NUMERIC) return (value: string) => Number(value);
  return pg.types.getTypeParser(oid, format as 'text');
}

/**
 * The production engine: a pool for queries and transactions, plus one dedicated
 * connection per process for LISTEN (RUNTIME.md, "one listening connection per process"),
 * reconnected with backoff if it drops. A lost notification only delays: everyone polls.
 */
export async function openPostgres(url: string, poolSize: number): Promise<Db> {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types: { getTypeParser: typeParser },
  });
  pool.on('error', () => {
    // An idle client died (server restart); the pool replaces it on next use.
  });
  await pool.query('select 1');
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let listenClient: pg.Client | null = null;
  let closed = false;

  async function connectListener(): Promise<void> {
    const client = new pg.Client({ connectionString: url });
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
          : await target.query({ name: statement.name, text: statement.text, values: params });
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

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
