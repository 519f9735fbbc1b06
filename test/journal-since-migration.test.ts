import { describe, expect, it } from 'vitest';
import { migrate } from '../src/store/migrate.js';
import { pruneEvents } from '../src/store/pruneEvents.js';
import { openBeforeMigration } from './support/db.js';

// Migration 0095 bounds each session's journal by time on the session row
// (`journal_since`) instead of indexing every event by it, and drops `events.tenant`. A
// journal written before must get a bound at or below its oldest event, so that the age
// rule still finds every old event, and nothing newer.
describe('migrating a journal written before 0095', () => {
  it('bounds each journal by its first event, and the age rule prunes what it did before', async () => {
    // Every migration but 0095 first: the database as the previous version left it.
    const { db, close } = await openBeforeMigration(95);
    try {
      // `pruned`: created ten days ago, its journal cut back to events 3 and 4 (five and one
      // days old); `empty`: its journal cut back whole; `fresh`: one event of today.
      await db.query(`insert into sessions (session_id, tenant, agent, last_sequence,
                                            earliest_sequence, created_at)
                      values ('pruned', 'acme', 'default', 4, 3, now() - interval '10 days'),
                             ('empty', 'acme', 'default', 2, 3, now() - interval '10 days'),
                             ('fresh', 'other', 'default', 1, 1, now())`);
      await db.query(`insert into events (session_id, sequence, tenant, type, turn_id, payload, at)
                      values ('pruned', 3, 'acme', 'message', 't1', '{}', now() - interval '5 days'),
                             ('pruned', 4, 'acme', 'message', 't2', '{}', now() - interval '1 day'),
                             ('fresh', 1, 'other', 'message', 't3', '{}', now())`);

      expect(await migrate(db)).toEqual(['0095_journal_since.sql']);
      const bounds = await db.query<{ session_id: string; days: number }>(
        `select session_id, round(extract(epoch from now() - journal_since) / 86400)::integer as days
           from sessions order by session_id`,
      );
      expect(bounds.rows).toEqual([
        { session_id: 'empty', days: 0 },
        { session_id: 'fresh', days: 0 },
        { session_id: 'pruned', days: 5 },
      ]);
      const columns = await db.query(
        `select 1 from information_schema.columns where table_name = 'events' and column_name = 'tenant'`,
      );
      expect(columns.rowCount).toBe(0);

      // Older than two days: event 3 of `pruned`, nothing else.
      const olderThan = new Date(Date.now() - 2 * 86_400_000);
      expect(await pruneEvents(db, { olderThan })).toEqual({
        sessions: 1,
        events: 1,
        skipped: false,
      });
      const left = await db.query<{ session_id: string; sequence: number }>(
        'select session_id, sequence from events order by session_id, sequence',
      );
      expect(left.rows.map((row) => `${row.session_id}:${Number(row.sequence)}`)).toEqual([
        'fresh:1',
        'pruned:4',
      ]);
    } finally {
      await close();
    }
  });
});
