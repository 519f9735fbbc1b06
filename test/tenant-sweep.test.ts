import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { a2aPushesBehind } from '../src/store/a2aPushesBehind.js';
import type { Db } from '../src/store/db.js';
import { threadsToFollow } from '../src/store/threadsToFollow.js';
import { webhookSessionsBehind } from '../src/store/webhookSessionsBehind.js';
import { openTestDb } from './support/db.js';

/**
 * The followers' sweeps of recent sessions walk `sessions_by_activity` tenant by tenant
 * (src/store/tenantSweep.ts): every tenant's recent sessions with unread events are found,
 * and no session written before the window or already read.
 */
describe('the sweeps of recent sessions across tenants', () => {
  let db: Db;
  let close: () => Promise<void>;

  beforeEach(async () => {
    ({ db, close } = await openTestDb());
    // Per tenant: a recent session behind its followers, an old one behind them, and a
    // recent one they have read up to its end.
    for (const tenant of ['acme', 'beta', 'gamma']) {
      for (const [kind, age, followed] of [
        ['recent', '1 second', 0],
        ['old', '1 hour', 0],
        ['read', '1 second', 4],
      ] as const) {
        const id = `${tenant}-${kind}`;
        await db.query(
          `insert into sessions (session_id, tenant, agent, last_sequence, updated_at)
           values ($1, $2, 'default', 4, now() - $3::interval)`,
          [id, tenant, age],
        );
        await db.query(
          `insert into adapter_threads (tenant, adapter, thread_id, session_id, followed_sequence)
           values ($1, 'telegram', $2, $2, $3)`,
          [tenant, id, followed],
        );
        await db.query(
          `insert into a2a_push_configs (push_id, tenant, task_id, owner, config_id, session_id,
                                         url, from_sequence, created_sequence, followed_sequence)
           values ($1, $2, $1, 'u', 'c', $1, 'http://127.0.0.1:1/', 0, 0, $3)`,
          [id, tenant, followed],
        );
        await db.query(
          `insert into webhook_streams (webhook, tenant, session_id, followed_sequence)
           values ('hook', $1, $2, $3)`,
          [tenant, id, followed],
        );
      }
    }
    await db.query(
      `insert into webhook_endpoints (webhook, tenant, registered_at)
       values ('hook', '*', now() - interval '1 day')`,
    );
  });

  afterEach(async () => {
    await close();
  });

  const recent = ['acme-recent', 'beta-recent', 'gamma-recent'];

  it("finds every tenant's recent sessions behind their followers, and no other", async () => {
    const sweep = { recentMs: 60_000, limit: 100 };
    expect((await threadsToFollow(db, { adapters: ['telegram'], ...sweep })).sort()).toEqual(
      recent,
    );
    expect((await a2aPushesBehind(db, sweep)).sort()).toEqual(recent);
    expect((await webhookSessionsBehind(db, { webhook: 'hook', ...sweep })).sort()).toEqual(recent);
    // Without a window: every session behind, old ones too.
    const all = { recentMs: null, limit: 100 };
    expect((await threadsToFollow(db, { adapters: ['telegram'], ...all })).sort()).toHaveLength(6);
    expect(await webhookSessionsBehind(db, { webhook: 'hook', ...all })).toHaveLength(6);
  });
});
