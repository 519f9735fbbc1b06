import { afterAll, beforeAll, expect, it } from 'vitest';
import { admitTurn } from '../src/store/admitTurn.js';
import type { Db } from '../src/store/db.js';
import { readHistory } from '../src/store/readHistory.js';
import { openTestDb } from './support/db.js';
import { until } from './support/poll.js';
import { admitInput } from './support/runtime-helpers.js';

// An admission that claims its session reads the burst's history in the same statement
// (admitToSession.ts). On PostgreSQL its update may wait for a writer of the session row
// and then see that writer's commit, which the statement's snapshot — and so its history
// read — does not: the claim then hands no history, and the worker reads it.

let db: Db;
let closeDb: () => Promise<void>;
const window = { limit: 50, bytes: 100_000 };

beforeAll(async () => {
  ({ db, close: closeDb } = await openTestDb());
  await db.query(
    `insert into definitions (kind, tenant, name, definition, content_hash, is_customized)
     values ('agent', '', 'default', '{}', 'test', false) on conflict do nothing`,
  );
});
afterAll(async () => {
  await closeDb?.();
});

it('hands no history when the snapshot missed a commit the claim waited for', async () => {
  const stored = await admitTurn(db, {
    ...admitInput({ sessionId: '', turnId: `snapshot_${Date.now()}_0`, message: 'stored' }),
    sessionId: null,
    triggers: new Map([['default', false]]),
  });
  const sessionId = stored.session_id;
  const turnId = `snapshot_${Date.now()}_1`;
  const claim = {
    token: 'waited',
    owner: 'owner_waited',
    ttlMs: 10_000,
    parkAfterAttempts: 3,
    maxTurns: 50,
    history: window,
  };
  let admitted: ReturnType<typeof admitTurn> | null = null;
  // A writer holds the session row while the admission starts, then commits a message the
  // admission's snapshot does not hold; the admission's update sees the row it left.
  await db.transaction(async (tx) => {
    const bumped = await tx.query<{ last_sequence: number }>(
      `update sessions set last_sequence = last_sequence + 1 where session_id = $1
       returning last_sequence`,
      [sessionId],
    );
    const sequence = Number(bumped.rows[0]?.last_sequence);
    await tx.query(
      `insert into messages (message_id, tenant, session_id, turn_id, role, author, content, sequence)
       values ($1, 'default', $2, null, 'assistant', 'agent', 'committed meanwhile', $3)`,
      [`msg_${turnId}`, sessionId, sequence],
    );
    await tx.query(
      `insert into events (session_id, sequence, type, turn_id, payload, message_offset)
       values ($1, $2, 'message', null, '{}'::jsonb, 0)`,
      [sessionId, sequence],
    );
    admitted = admitTurn(db, {
      ...admitInput({ sessionId, turnId, message: 'after it' }),
      claim,
    });
    await until(
      () =>
        db.query<{ waiting: number }>(
          `select count(*)::int as waiting from pg_stat_activity
            where wait_event_type = 'Lock' and query like '%with found as%'`,
        ),
      (found) => (found.rows[0]?.waiting ?? 0) > 0,
      'the admission waiting for the session row',
    );
  });
  const admission = await admitted!;
  expect(admission.claimed?.lease_token).toBe('waited');
  expect(admission.claimed?.started?.turn_ids).toEqual([turnId]);
  expect(admission.claimed?.started?.context).toBeUndefined();
  // What the worker reads then holds the message the snapshot missed.
  const read = await readHistory(db, {
    sessionId,
    tenant: 'default',
    historyBefore: admission.sequence,
    historyLimit: window.limit,
    historyBytes: window.bytes,
    authors: ['local'],
  });
  expect(read.history.map((message) => message.content)).toEqual(['stored', 'committed meanwhile']);

  // Without a writer in the way, the same claim hands the history it read.
  await db.query(
    `update sessions set state = 'idle', lease_token = null, lease_owner = null,
            lease_expires_at = null, input_cursor = input_count, current_turn_id = null
      where session_id = $1`,
    [sessionId],
  );
  const next = await admitTurn(db, {
    ...admitInput({ sessionId, turnId: `${turnId}_next`, message: 'and again' }),
    claim: { ...claim, token: 'unhindered' },
  });
  expect(next.claimed?.started?.context?.history.map((message) => message.content)).toEqual([
    'stored',
    'committed meanwhile',
    'after it',
  ]);
});
