import type { Db, Queryable } from '../../src/store/db.js';

/**
 * The "nothing written" fingerprint: a content hash of every table of the schema, so that
 * a request that must not write (a refusal, a GET) is caught whatever it touched. Tables
 * come from the catalog, so a table a later migration adds is in it without a change
 * here; only the tables below are left out, each for its reason.
 */
export const unfingerprinted: Readonly<Record<string, string>> = {
  // The migrator's bookkeeping: written by `migrate` at start-up, never by a request.
  parley_migrations: 'the migrations applied, written only by migrate',
};

/** Every table of the current schema but the ones left out above, by name. */
export async function fingerprintedTables(db: Queryable): Promise<string[]> {
  const found = await db.query<{ table_name: string }>(
    `select table_name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE'
      order by table_name`,
  );
  return found.rows.map((row) => row.table_name).filter((name) => !(name in unfingerprinted));
}

export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Table name → `rows:md5` over every row's full content: `row::text` is the row literal
 * with every column (NULL and '' told apart), hashed in the order of that text, so the
 * hash depends on the content only, never on the physical order. Both engines run it.
 */
export async function fingerprint(
  db: Queryable,
  tables?: readonly string[],
): Promise<Record<string, string>> {
  const names = tables ?? (await fingerprintedTables(db));
  if (names.length === 0) return {};
  const found = await db.query<{ name: string; hash: string }>(
    names
      .map(
        (name, index) =>
          `select $${index + 1}::text as name,
                  count(*) || ':' || md5(coalesce(string_agg(t::text, E'\\n' order by t::text), '')) as hash
             from ${quoteIdentifier(name)} t`,
      )
      .join(' union all '),
    [...names],
  );
  return Object.fromEntries(found.rows.map((row) => [row.name, row.hash]));
}

/**
 * The next transaction id the database will assign. Only a transaction that writes (or
 * starts to, and rolls back) is given one, so while it stays the same nothing was written
 * anywhere and a content `fingerprint` taken before still holds: the fuzzer hashes the
 * tables only after a request that moved it. Both engines run it.
 */
export async function nextTransactionId(db: Queryable): Promise<string> {
  const found = await db.query<{ next: string }>(
    'select pg_snapshot_xmax(pg_current_snapshot())::text as next',
  );
  return found.rows[0]?.next ?? '';
}

/**
 * The fingerprint of one tenant's rows: every table with a `tenant` column, only the rows
 * of `tenant` (what another tenant's requests must never change, even those that write
 * their own rows). Tables without the column are deployment-wide (the model catalog) or
 * the Chat SDK's own state, and are left out.
 */
export async function tenantFingerprint(
  db: Queryable,
  tenant: string,
): Promise<Record<string, string>> {
  const found = await db.query<{ table_name: string }>(
    `select c.table_name from information_schema.columns c
       join information_schema.tables t
         on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = current_schema() and c.column_name = 'tenant'
        and t.table_type = 'BASE TABLE'
      order by c.table_name`,
  );
  const names = found.rows.map((row) => row.table_name);
  const hashes = await db.query<{ name: string; hash: string }>(
    names
      .map(
        (name, index) =>
          `select $${index + 2}::text as name,
                  count(*) || ':' || md5(coalesce(string_agg(t::text, E'\\n' order by t::text), '')) as hash
             from ${quoteIdentifier(name)} t where t.tenant = $1`,
      )
      .join(' union all '),
    [tenant, ...names],
  );
  return Object.fromEntries(hashes.rows.map((row) => [row.name, row.hash]));
}

/** The tables whose hash differs between two fingerprints, for a failure message. */
export function changedTables(
  before: Record<string, string>,
  after: Record<string, string>,
): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((name) => before[name] !== after[name]).sort();
}

/**
 * An expression of a column's type whose value differs from `current` (NULL included),
 * by the catalog's `data_type`; null for a type it does not know (the caller reports it:
 * a new type needs a line here).
 */
export function changedValue(current: string, dataType: string): string | null {
  const c = current;
  switch (dataType) {
    case 'text':
    case 'character varying':
    case 'character':
      return `coalesce(${c} || '~', '~')`;
    case 'smallint':
    case 'integer':
    case 'bigint':
    case 'numeric':
    case 'real':
    case 'double precision':
      return `coalesce(${c} + 1, 1)`;
    case 'boolean':
      return `coalesce(not ${c}, true)`;
    case 'timestamp with time zone':
    case 'timestamp without time zone':
    case 'date':
      return `coalesce(${c} + interval '1 day', now())`;
    case 'interval':
      return `coalesce(${c} + interval '1 second', interval '1 second')`;
    case 'jsonb':
      return `jsonb_build_array(${c})`;
    case 'json':
      return `json_build_array(${c})`;
    case 'bytea':
      return `coalesce(${c}, ''::bytea) || '\x7e'::bytea`;
    case 'tsvector':
      return `coalesce(${c}, ''::tsvector) || 'zzfingerprintzz'::tsvector`;
    case 'ARRAY':
      return `array_append(${c}, null)`;
    case 'uuid':
      return 'gen_random_uuid()';
    default:
      return null;
  }
}

class RolledBack extends Error {}

interface Column {
  name: string;
  /** `format_type`: what a NULL of it is cast to. */
  type: string;
  /** information_schema's `data_type`: what `changedValue` switches on. */
  data_type: string;
  generated: boolean;
  identity: boolean;
}

/**
 * Proves that `fingerprint` sees a change of any single column of any table. For each
 * table, inside one transaction that is always rolled back: its constraints (but NOT NULL),
 * generated expressions and identities are dropped, so that any value fits; a table
 * without rows gets one made up; then each column in turn is changed in one row, the
 * table fingerprinted, and the change undone (a savepoint). Returns the tables checked,
 * those that had no row of their own, and the columns whose change the fingerprint did
 * not see or that had no known change.
 */
export async function blindColumns(
  db: Db,
  tables?: readonly string[],
): Promise<{ checked: string[]; madeUp: string[]; blind: string[]; unknownTypes: string[] }> {
  const outcome = {
    checked: [] as string[],
    madeUp: [] as string[],
    blind: [] as string[],
    unknownTypes: [] as string[],
  };
  for (const table of tables ?? (await fingerprintedTables(db))) {
    const quoted = quoteIdentifier(table);
    outcome.checked.push(table);
    await db
      .transaction(async (tx) => {
        const found = await tx.query<Column>(
          `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type,
                  c.data_type, c.is_generated = 'ALWAYS' as generated,
                  c.is_identity = 'YES' as identity
             from pg_attribute a
             join information_schema.columns c
               on c.table_schema = current_schema() and c.table_name = $1
              and c.column_name = a.attname
            where a.attrelid = $2::regclass and a.attnum > 0 and not a.attisdropped
            order by a.attnum`,
          [table, quoted],
        );
        const columns = found.rows;
        const constraints = await tx.query<{ conname: string }>(
          `select conname from pg_constraint where conrelid = $1::regclass and contype <> 'n'`,
          [quoted],
        );
        for (const { conname } of constraints.rows) {
          await tx.query(
            `alter table ${quoted} drop constraint if exists ${quoteIdentifier(conname)} cascade`,
          );
        }
        for (const column of columns) {
          const name = quoteIdentifier(column.name);
          if (column.generated) {
            await tx.query(`alter table ${quoted} alter column ${name} drop expression`);
          }
          if (column.identity) {
            await tx.query(`alter table ${quoted} alter column ${name} drop identity`);
          }
        }
        const unknown = columns.filter((column) => changedValue('x', column.data_type) === null);
        for (const column of unknown) {
          outcome.unknownTypes.push(`${table}.${column.name} (${column.data_type})`);
        }
        if (unknown.length > 0) throw new RolledBack();
        const rows = await tx.query(`select 1 from ${quoted} limit 1`);
        if (rows.rowCount === 0) {
          outcome.madeUp.push(table);
          await tx.query(
            `insert into ${quoted} (${columns.map((column) => quoteIdentifier(column.name)).join(', ')})
             values (${columns.map((column) => changedValue(`null::${column.type}`, column.data_type)).join(', ')})`,
          );
        }
        const before = (await fingerprint(tx, [table]))[table];
        for (const column of columns) {
          const name = quoteIdentifier(column.name);
          await tx.query('savepoint one_column');
          await tx.query(
            `update ${quoted} set ${name} = ${changedValue(name, column.data_type)}
              where ctid = (select ctid from ${quoted} limit 1)`,
          );
          const after = (await fingerprint(tx, [table]))[table];
          if (after === before) outcome.blind.push(`${table}.${column.name}`);
          await tx.query('rollback to savepoint one_column');
        }
        throw new RolledBack();
      })
      .catch((error: unknown) => {
        if (!(error instanceof RolledBack)) throw error;
      });
  }
  return outcome;
}
