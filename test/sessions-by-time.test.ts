import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db, Queryable, Statement } from '../src/store/db.js';
import { listSessions } from '../src/store/listSessions.js';
import { noFollowers } from '../src/store/pruneBatches.js';
import { pruneEventsBatch } from '../src/store/pruneEvents.js';
import { pruneSessions } from '../src/store/pruneSessions.js';
import { recentSessionsSql, tenantsSql } from '../src/store/tenantSweep.js';
import { trustedViewer } from '../src/store/visibility.js';
import { openTestDb } from './support/db.js';

/**
 * The statements that find sessions by time, on a large `sessions` table, most of it old
 * and idle (the journal benchmark's shape at 1,000,000 events): the whole-session
 * retention batch must walk the sessions oldest first by index and stop at its size, not
 * read and sort every old session, or a retention run costs the square of the sessions it
 * removes; the journal's age rule, the session list and the followers' sweep read an index
 * range too.
 */
describe('sessions found by time at scale', () => {
  let db: Db;
  let close: () => Promise<void>;

  beforeEach(async () => {
    ({ db, close } = await openTestDb());
  });

  afterEach(async () => {
    await close();
  });

  /** The plan of each statement `run` runs (each answered with no rows), instead of running it. */
  async function plans(
    run: (db: Queryable) => Promise<unknown> = (explaining) =>
      pruneSessions(explaining, {
        olderThan: new Date(Date.now() - 30 * 24 * 3600_000),
        tenant: null,
        batchSize: 100,
        followers: noFollowers,
      }),
  ): Promise<string> {
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
      await run(explaining);
    });
    return found.join('\n');
  }

  /** 20,000 idle sessions of three tenants whose turns are all answered, nearly all a year old. */
  async function manyOldSessions(): Promise<void> {
    await db.query(
      `insert into sessions (session_id, tenant, agent, state, last_sequence, input_count,
                             input_cursor, created_at, updated_at)
       select 'old-' || i, 'tenant-' || i % 3, 'default', 'idle', 5 * (1 + i % 6), 1 + i % 6, 1 + i % 6,
              now() - interval '400 days' + i * interval '25 minutes',
              now() - interval '400 days' + i * interval '25 minutes'
         from generate_series(1, 20000) as i`,
    );
    await db.query(`update sessions set journal_since = created_at`);
    await db.query('analyze sessions');
  }

  it('finds the whole-session batch through sessions_by_activity, tenant by tenant, oldest first', async () => {
    await manyOldSessions();
    const plan = await plans();
    expect(plan).toMatch(/Index (Only )?Scan using sessions_by_activity on sessions s\b/);
    expect(plan).not.toContain('Seq Scan on sessions s');
  });

  it("finds the journal's oldest session through sessions_by_journal_age, tenant by tenant", async () => {
    await manyOldSessions();
    const plan = await plans((explaining) =>
      pruneEventsBatch(explaining, {
        olderThan: new Date(Date.now() - 30 * 24 * 3600_000),
        tenant: null,
        batchSize: 1000,
        followers: noFollowers,
      }),
    );
    expect(plan).toMatch(/Index (Only )?Scan using sessions_by_journal_age on sessions s\b/);
    expect(plan).not.toContain('Seq Scan');
  });

  it("lists a tenant's sessions newest first, and a later page, through sessions_by_activity", async () => {
    await manyOldSessions();
    const middle = new Date(Date.now() - 200 * 24 * 3600_000).toISOString();
    const plan = await plans(async (explaining) => {
      await listSessions(explaining, 'tenant-1', trustedViewer, { limit: 50, cursor: null });
      await listSessions(explaining, 'tenant-1', trustedViewer, {
        limit: 50,
        cursor: { updatedAt: middle, sessionId: 'old-10000' },
      });
    });
    expect(
      plan.match(/Index Scan Backward using sessions_by_activity on sessions s\b/g),
    ).toHaveLength(2);
    expect(plan).not.toContain('Seq Scan');
  });

  it("sweeps every tenant's recent sessions through sessions_by_activity", async () => {
    await manyOldSessions();
    const plan = await plans((explaining) =>
      explaining.query(
        `with recursive ${tenantsSql()} select r.session_id from ${recentSessionsSql('$1::bigint')} r`,
        [60_000],
      ),
    );
    expect(plan).toMatch(/Index (Only )?Scan using sessions_by_activity on sessions x\b/);
    expect(plan).not.toContain('Seq Scan');
  });

  it('orders by the instant of activity, not its second, across pages', async () => {
    // Five sessions: three in one second (ms apart, one of them twice with ids tied), two
    // in the seconds around it.
    const base = Date.parse('2026-06-01T12:00:00.000Z');
    const at = (ms: number) => new Date(base + ms).toISOString();
    const rows = [
      ['a', at(-400)],
      ['b', at(100)],
      ['c', at(700)],
      ['d', at(700)],
      ['e', at(300)],
      ['f', at(1200)],
    ];
    for (const [id, updated] of rows) {
      await db.query(
        `insert into sessions (session_id, tenant, agent, updated_at) values ($1, 'order', 'default', $2)`,
        [id, updated],
      );
    }
    const seen: string[] = [];
    let cursor: { updatedAt: string; sessionId: string } | null = null;
    for (let page = 0; page < 4; page++) {
      const found = await listSessions(db, 'order', trustedViewer, { limit: 2, cursor });
      seen.push(...found.items.map((item) => item.session_id));
      const last = found.items[found.items.length - 1];
      if (!found.next_cursor || !last) break;
      cursor = { updatedAt: last.updated_at, sessionId: last.session_id };
    }
    expect(seen).toEqual(['f', 'd', 'c', 'e', 'b', 'a']);
  });
});
