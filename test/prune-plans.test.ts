import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db, Queryable, Statement } from '../src/store/db.js';
import { noFollowers } from '../src/store/pruneBatches.js';
import { pruneSessions } from '../src/store/pruneSessions.js';
import { openTestDb } from './support/db.js';

/**
 * The whole-session retention batch on a large `sessions` table, most of it old and idle
 * (the journal benchmark's shape at 1,000,000 events): a batch must walk the sessions
 * oldest first by index and stop at its size, not read and sort every old session, or a
 * retention run costs the square of the sessions it removes.
 */
describe('the whole-session retention batch at scale', () => {
  let db: Db;
  let close: () => Promise<void>;

  beforeEach(async () => {
    ({ db, close } = await openTestDb());
  });

  afterEach(async () => {
    await close();
  });

  /** The plan of each statement `pruneSessions` runs, instead of running it. */
  async function plans(): Promise<string> {
    const found: string[] = [];
    await db.transaction(async (tx) => {
      const explaining: Queryable = {
        async query<Row>(statement: string | Statement, params?: unknown[]) {
          const text = typeof statement === 'string' ? statement : statement.text;
          const plan = await tx.query<{ 'QUERY PLAN': string }>(
            `explain (costs off) ${text}`,
            params,
          );
          found.push(plan.rows.map((row) => row['QUERY PLAN']).join('\n'));
          return { rows: [] as Row[], rowCount: 0 };
        },
      };
      await pruneSessions(explaining, {
        olderThan: new Date(Date.now() - 30 * 24 * 3600_000),
        tenant: null,
        batchSize: 100,
        followers: noFollowers,
      });
    });
    return found.join('\n');
  }

  it('finds its batch through sessions_by_activity, tenant by tenant, oldest first, without scanning sessions', async () => {
    // 20,000 idle sessions of three tenants whose turns are all answered, nearly all of
    // them a year old.
    await db.query(
      `insert into sessions (session_id, tenant, agent, state, last_sequence, input_count,
                             input_cursor, created_at, updated_at)
       select 'old-' || i, 'tenant-' || i % 3, 'default', 'idle', 5 * (1 + i % 6), 1 + i % 6, 1 + i % 6,
              now() - interval '400 days' + i * interval '25 minutes',
              now() - interval '400 days' + i * interval '25 minutes'
         from generate_series(1, 20000) as i`,
    );
    await db.query('analyze sessions');
    const plan = await plans();
    expect(plan).toMatch(/Index (Only )?Scan using sessions_by_activity on sessions s\b/);
    expect(plan).not.toContain('Seq Scan on sessions s');
  });
});
