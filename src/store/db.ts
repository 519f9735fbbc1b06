/**
 * The one boundary between Parley and a database engine (after pg-boss's `executeSql`):
 * plain SQL text with positional parameters, a transaction helper, and LISTEN. Both
 * engines run the same SQL; every engine difference lives in pglite.ts or postgres.ts.
 *
 * Type conventions both adapters guarantee: int8 and numeric come back as JS numbers,
 * timestamptz as Date, json/jsonb parsed.
 */
export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

/**
 * A statement the hot path runs on every turn: parsed and planned once per connection (a
 * named prepared statement; on PGlite once per instance, through its wire protocol)
 * instead of on every call. The name must be unique to the text.
 */
export interface Statement {
  name: string;
  text: string;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(
    statement: string | Statement,
    params?: unknown[],
  ): Promise<QueryResult<Row>>;
}

export interface Db extends Queryable {
  readonly engine: 'pglite' | 'postgres';
  /** Runs `work` in one transaction; rolls back if it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Subscribes to NOTIFY on `channel`; returns the unsubscribe function. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Hands notifications to this process's listeners without a statement: the embedded
   * engine's notifications never leave the process anyway (PostgreSQL has none).
   */
  notifyLocally?(channel: string, payloads: string[]): void;
  close(): Promise<void>;
}

/** PostgreSQL's unique_violation: how admission detects a concurrent duplicate. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505';
}
