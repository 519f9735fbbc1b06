import { mkdirSync } from 'node:fs';
import { parse, PGlite, protocol, types } from '@electric-sql/pglite';
import { lockDataDir } from './dataDirLock.js';
import type { Db, Queryable, QueryResult, Statement } from './db.js';

const parsers = {
  [types.INT8]: (value: string) => Number(value),
  [types.NUMERIC]: (value: string) => Number(value),
};

/**
 * How often the embedded engine vacuums a database that was used since, unless told
 * (`storage.embedded_vacuum_interval_ms`): PostgreSQL's autovacuum looks as often
 * (`autovacuum_naptime`).
 */
const defaultVacuumIntervalMs = 60_000;

/**
 * The embedded engine: PostgreSQL compiled to WASM, in this process, data directory on
 * disk. It survives a process kill but does not fsync, so a power cut can lose recent
 * writes (README, "Durability"). One process owns a data directory at a time, enforced by
 * a lock file (dataDirLock.ts) so that a second `parley serve` fails clearly instead of
 * corrupting it.
 *
 * PGlite has no autovacuum, so this process vacuums: every `vacuumIntervalMs` (0: never)
 * after a query ran, one `VACUUM` of the database. Without it, the dead version every
 * update of a session row leaves (three a turn, none of them HOT: docs/benchmarks.md) and
 * its index entries stayed for good, and what retention deleted never freed its space.
 * PGlite runs it under its one lock, as it runs every query.
 */
export async function openPglite(
  dataDir: string | null,
  options: { sharedBuffersMb?: number; vacuumIntervalMs?: number } = {},
): Promise<Db> {
  let releaseLock = () => {};
  if (dataDir !== null) {
    mkdirSync(dataDir, { recursive: true });
    releaseLock = lockDataDir(dataDir);
  }
  let pglite: PGlite;
  try {
    pglite = new PGlite({
      ...(dataDir === null ? {} : { dataDir }),
      // As a start parameter: PGlite's `postgresqlconf` would overwrite the data
      // directory's postgresql.conf.
      ...(options.sharedBuffersMb === undefined
        ? {}
        : {
            startParams: [
              ...PGlite.defaultStartParams,
              '-c',
              `shared_buffers=${options.sharedBuffersMb}MB`,
            ],
          }),
      parsers,
    });
    await pglite.waitReady;
  } catch (error) {
    releaseLock();
    throw error;
  }
  const prepared = new PreparedStatements(pglite);
  let used = false;
  const vacuum = new Vacuum(pglite, options.vacuumIntervalMs ?? defaultVacuumIntervalMs, () => {
    const since = used;
    used = false;
    return since;
  });
  const wrap = (target: PGlite | Queryable, inTransaction: boolean): Queryable => ({
    async query<Row>(
      statement: string | Statement,
      params: unknown[] = [],
    ): Promise<QueryResult<Row>> {
      used = true;
      // PGlite runs queries on this thread and resolves them without giving the event
      // loop a turn: without this, a turn's chain of queries starves HTTP and SSE.
      await new Promise((resolve) => setImmediate(resolve));
      const result =
        typeof statement === 'string'
          ? await (target as PGlite).query<Row>(statement, params)
          : await prepared.run<Row>(statement, params, inTransaction);
      // PGlite reports affectedRows 0 for a SELECT: count the rows of anything that returns rows.
      const rowCount = result.fields.length > 0 ? result.rows.length : (result.affectedRows ?? 0);
      return { rows: result.rows, rowCount };
    },
  });
  const root = wrap(pglite, false);
  const listeners = new Map<string, Set<(payload: string) => void>>();
  return {
    engine: 'pglite',
    query: <Row>(statement: string | Statement, params?: unknown[]) =>
      root.query<Row>(statement, params),
    transaction: (work) => pglite.transaction((tx) => work(wrap(tx as unknown as Queryable, true))),
    async listen(channel, onPayload) {
      const unlisten = await pglite.listen(channel, onPayload);
      let local = listeners.get(channel);
      if (!local) listeners.set(channel, (local = new Set()));
      local.add(onPayload);
      return async () => {
        local.delete(onPayload);
        if (!pglite.closed) await unlisten();
      };
    },
    notifyLocally(channel, payloads) {
      // Delivered on a later turn of the event loop, as PGlite delivers a NOTIFY.
      setImmediate(() => {
        for (const payload of payloads) {
          for (const onPayload of listeners.get(channel) ?? []) onPayload(payload);
        }
      });
    },
    async close() {
      await vacuum.stop();
      if (!pglite.closed) await pglite.close();
      releaseLock();
    },
  };
}

/** The embedded engine's autovacuum (see `openPglite`): one `VACUUM` at a time. */
class Vacuum {
  private readonly timer: NodeJS.Timeout | null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly pglite: PGlite,
    intervalMs: number,
    usedSince: () => boolean,
  ) {
    this.timer =
      intervalMs > 0
        ? setInterval(() => {
            if (this.running === null && !pglite.closed && usedSince()) this.run();
          }, intervalMs)
        : null;
    this.timer?.unref();
  }

  private run(): void {
    this.running = this.pglite
      .exec('vacuum')
      .then(
        () => {},
        // Closed meanwhile, or out of space: the next round tries again.
        () => {},
      )
      .finally(() => {
        this.running = null;
      });
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    await this.running;
  }
}

/**
 * Named prepared statements on PGlite, as the PostgreSQL adapter has them: the hot path's
 * statements are parsed and planned once per instance instead of on every call (PGlite's
 * `query` parses, describes and plans each time; for the turn's statements that was most
 * of their cost). Built on PGlite's wire-protocol entry point, under the same query lock
 * and with the same parameter serializers and result parsers as its `query`.
 */
class PreparedStatements {
  private readonly paramTypes = new Map<string, number[]>();

  constructor(private readonly pglite: PGlite) {}

  run<Row>(
    statement: Statement,
    params: unknown[],
    inTransaction: boolean,
  ): Promise<{ rows: Row[]; fields: unknown[]; affectedRows?: number }> {
    const pglite = this.pglite as PGlite & {
      _runExclusiveQuery<T>(work: () => Promise<T>): Promise<T>;
      _runExclusiveTransaction<T>(work: () => Promise<T>): Promise<T>;
    };
    // Like PGlite's own `query`: outside a transaction, wait for any open one to end (its
    // statements must not interleave with ours); inside, the transaction holds that lock.
    const exclusive = <T>(work: () => Promise<T>) =>
      inTransaction
        ? pglite._runExclusiveQuery(work)
        : pglite._runExclusiveTransaction(() => pglite._runExclusiveQuery(work));
    return exclusive(async () => {
      const types = await this.prepare(statement);
      const values = params.map((value, index) => {
        if (value === null || value === undefined) return null;
        const serializer = pglite.serializers[types[index] ?? 0];
        if (serializer) return serializer(value);
        if (typeof value === 'string') return value;
        if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
          return String(value);
        }
        return JSON.stringify(value);
      });
      const messages = await pglite.execProtocolStream(
        frames(
          protocol.serialize.bind({ statement: statement.name, values }),
          protocol.serialize.describe({ type: 'P' }),
          protocol.serialize.execute({}),
          protocol.serialize.sync(),
        ),
        { syncToFs: false },
      );
      if (!inTransaction) await pglite.syncToFs();
      const [result] = parse.parseResults(messages, pglite.parsers);
      return result as unknown as { rows: Row[]; fields: unknown[]; affectedRows?: number };
    });
  }

  private async prepare(statement: Statement): Promise<number[]> {
    const known = this.paramTypes.get(statement.name);
    if (known) return known;
    const messages = await this.pglite.execProtocolStream(
      frames(
        protocol.serialize.parse({ name: statement.name, text: statement.text }),
        protocol.serialize.describe({ type: 'S', name: statement.name }),
        protocol.serialize.sync(),
      ),
      { syncToFs: false },
    );
    const types = parse.parseDescribeStatementResults(messages);
    this.paramTypes.set(statement.name, types);
    return types;
  }
}

function frames(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
