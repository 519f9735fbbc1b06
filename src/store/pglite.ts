import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite, types } from '@electric-sql/pglite';
import type { Db, Queryable, QueryResult, Statement } from './db.js';

const parsers = {
  [types.INT8]: (value: string) => Number(value),
  [types.NUMERIC]: (value: string) => Number(value),
};

/**
 * The embedded engine: PostgreSQL compiled to WASM, in this process, data directory on
 * disk. It survives a process kill but does not fsync, so a power cut can lose recent
 * writes (README, "Durability"). One process owns a data directory at a time, enforced by
 * a lock file so that a second `parley serve` fails clearly instead of corrupting it.
 */
export async function openPglite(dataDir: string | null): Promise<Db> {
  let releaseLock = () => {};
  if (dataDir !== null) {
    mkdirSync(dataDir, { recursive: true });
    releaseLock = lockDataDir(dataDir);
  }
  let pglite: PGlite;
  try {
    pglite = new PGlite({ ...(dataDir === null ? {} : { dataDir }), parsers });
    await pglite.waitReady;
  } catch (error) {
    releaseLock();
    throw error;
  }
  const wrap = (target: PGlite | Queryable): Queryable => ({
    async query<Row>(
      statement: string | Statement,
      params: unknown[] = [],
    ): Promise<QueryResult<Row>> {
      const text = typeof statement === 'string' ? statement : statement.text;
      // PGlite runs queries on this thread and resolves them without giving the event
      // loop a turn: without this, a turn's chain of queries starves HTTP and SSE.
      await new Promise((resolve) => setImmediate(resolve));
      const result = await (target as PGlite).query<Row>(text, params);
      // PGlite reports affectedRows 0 for a SELECT: count the rows of anything that returns rows.
      const rowCount = result.fields.length > 0 ? result.rows.length : (result.affectedRows ?? 0);
      return { rows: result.rows, rowCount };
    },
  });
  const root = wrap(pglite);
  return {
    engine: 'pglite',
    query: <Row>(statement: string | Statement, params?: unknown[]) =>
      root.query<Row>(statement, params),
    transaction: (work) => pglite.transaction((tx) => work(wrap(tx as unknown as Queryable))),
    async listen(channel, onPayload) {
      const unlisten = await pglite.listen(channel, onPayload);
      return async () => {
        if (!pglite.closed) await unlisten();
      };
    },
    async close() {
      if (!pglite.closed) await pglite.close();
      releaseLock();
    },
  };
}

function lockDataDir(dataDir: string): () => void {
  const lockPath = join(dataDir, 'parley.lock');
  try {
    const holder = Number(readFileSync(lockPath, 'utf8').trim());
    if (holder && holder !== process.pid && processAlive(holder)) {
      throw new Error(
        `data directory ${dataDir} is in use by process ${holder}; embedded storage allows one process (use PostgreSQL for several)`,
      );
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  writeFileSync(lockPath, String(process.pid));
  return () => rmSync(lockPath, { force: true });
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
