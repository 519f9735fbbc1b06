import { describe, expect, it } from 'vitest';
import { migrate } from '../src/store/migrate.js';
import { openBeforeMigration } from './support/db.js';

// Migration 0060 gives sessions an owner and a visibility. Sessions that existed before it
// keep today's behaviour (tenant-visible), except personal sessions: their user's, private.
describe('migrating sessions made before owners and visibility', () => {
  it('keeps them tenant-visible, makes personal sessions private, fills certain owners', async () => {
    // Every migration but 0060 first: the database as the previous version left it.
    const { db, close } = await openBeforeMigration(60);
    try {
      await db.query(`insert into sessions (session_id, tenant, agent, title)
                      values ('s_plain', 'acme', 'default', 'shared'),
                             ('s_personal', 'acme', 'coach', 'coach (personal)'),
                             ('s_execution', 'acme', 'default', 'report (x1)')`);
      await db.query(`insert into personal_sessions (session_id, tenant, user_name, agent)
                      values ('s_personal', 'acme', 'alice', 'coach')`);
      await db.query(`insert into executions (tenant, execution_id, mission, agent, user_name,
                                              session_id, fingerprint, spec, max_iterations)
                      values ('acme', 'x1', 'report', 'default', 'bob', 's_execution', 'f',
                              '{}'::jsonb, 1)`);

      expect(await migrate(db)).toEqual(['0060_session_owner.sql']);
      const rows = await db.query<{
        session_id: string;
        owner: string | null;
        visibility: string;
        members: string[];
      }>('select session_id, owner, visibility, members from sessions order by session_id');
      expect(rows.rows).toEqual([
        { session_id: 's_execution', owner: 'bob', visibility: 'tenant', members: [] },
        { session_id: 's_personal', owner: 'alice', visibility: 'private', members: [] },
        { session_id: 's_plain', owner: null, visibility: 'tenant', members: [] },
      ]);
    } finally {
      await close();
    }
  });
});
