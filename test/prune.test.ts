import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noFollowers } from '../src/store/pruneBatches.js';
import { pruneEvents, pruneEventsBatch } from '../src/store/pruneEvents.js';
import { checkJournalInvariants } from './support/invariants.js';
import { openTestDb } from './support/db.js';
import { admit, journal, sessionRow } from './support/runtime-helpers.js';
import type { Db } from '../src/store/db.js';

/** Issue 6, item 12: retention prunes in bounded batches, a prefix of each journal. */

let db: Db;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ db, close } = await openTestDb());
});
afterAll(async () => {
  await checkJournalInvariants(db);
  await close();
});

describe('pruneEvents', () => {
  it('deletes old events in bounded batches, a prefix of each session, and raises earliest_sequence', async () => {
    const sessions: string[] = [];
    for (let index = 0; index < 3; index++) {
      const first = await admit(db, { turnId: `pr_${index}_0`, message: 'old' });
      sessions.push(first.session_id);
      for (let turn = 1; turn < 7; turn++) {
        await admit(db, {
          sessionId: first.session_id,
          turnId: `pr_${index}_${turn}`,
          message: 'old',
        });
      }
    }
    // Everything so far is "old"; one more event per session is new.
    await db.query(`update events set at = now() - interval '2 days'`);
    await db.query(`update sessions set journal_since = now() - interval '2 days'`);
    for (const [index, sessionId] of sessions.entries()) {
      await admit(db, { sessionId, turnId: `pr_${index}_new`, message: 'new' });
    }
    const transactions: number[] = [];
    const counting: Db = {
      ...db,
      transaction: (work) => {
        transactions.push(1);
        return db.transaction(work);
      },
    };
    const pruned = await pruneEvents(counting, {
      olderThan: new Date(Date.now() - 86_400_000),
      batchSize: 3,
    });
    expect(pruned).toEqual({ sessions: 3, events: 21, skipped: false });
    // 7 old events per session in batches of at most 3: three batches each, plus the last look.
    expect(transactions.length).toBe(3 * 3 + 1);
    for (const sessionId of sessions) {
      const row = await sessionRow(db, sessionId);
      expect(row.earliest_sequence).toBe(8);
      expect((await journal(db, sessionId)).map((event) => event.sequence)).toEqual([8]);
    }
  });

  it('touches only the given tenant', async () => {
    const mine = await admit(db, { turnId: 'tenant_mine', message: 'x' });
    await db.query(`update sessions set tenant = 'other' where session_id = $1`, [mine.session_id]);
    await db.query(`update events set at = now() - interval '2 days' where session_id = $1`, [
      mine.session_id,
    ]);
    await db.query(
      `update sessions set journal_since = now() - interval '2 days' where session_id = $1`,
      [mine.session_id],
    );
    const pruned = await pruneEvents(db, {
      olderThan: new Date(Date.now() - 86_400_000),
      tenant: 'default',
    });
    expect(pruned.events).toBe(0);
    expect(await journal(db, mine.session_id)).toHaveLength(1);
    await db.query(`update sessions set tenant = 'default' where session_id = $1`, [
      mine.session_id,
    ]);
  });

  it('keeps the events a configured platform thread or webhook endpoint has not read yet', async () => {
    // Old events the tests above left behind go first.
    await pruneEvents(db, { olderThan: new Date(Date.now() - 86_400_000) });
    const first = await admit(db, { turnId: 'follow_0', message: 'old' });
    const sessionId = first.session_id;
    for (let turn = 1; turn < 6; turn++) {
      await admit(db, { sessionId, turnId: `follow_${turn}`, message: 'old' });
    }
    await db.query(`update events set at = now() - interval '2 days' where session_id = $1`, [
      sessionId,
    ]);
    await db.query(
      `update sessions set journal_since = now() - interval '2 days' where session_id = $1`,
      [sessionId],
    );
    // The Telegram follower folded the journal up to 4, the webhook `crm` enqueued up to 2.
    await db.query(
      `insert into adapter_threads (tenant, adapter, thread_id, session_id, followed_sequence)
       values ('default', 'telegram', 'chat_1', $1, 4)`,
      [sessionId],
    );
    await db.query(
      `insert into webhook_streams (tenant, webhook, session_id, followed_sequence)
       values ('default', 'crm', $1, 2)`,
      [sessionId],
    );
    const olderThan = new Date(Date.now() - 86_400_000);
    const both = { adapters: ['telegram'], webhooks: ['crm'] };
    expect(await pruneEvents(db, { olderThan, followers: both })).toEqual({
      sessions: 1,
      events: 2,
      skipped: false,
    });
    expect((await journal(db, sessionId)).map((event) => event.sequence)).toEqual([3, 4, 5, 6]);
    // Nothing more until a follower reads further.
    expect((await pruneEvents(db, { olderThan, followers: both })).events).toBe(0);
    await db.query(`update webhook_streams set followed_sequence = 6 where session_id = $1`, [
      sessionId,
    ]);
    expect((await pruneEvents(db, { olderThan, followers: both })).events).toBe(2);
    // An endpoint or platform no longer configured holds nothing back.
    expect(await pruneEvents(db, { olderThan, followers: { adapters: [], webhooks: [] } })).toEqual(
      { sessions: 1, events: 2, skipped: false },
    );
    expect(await journal(db, sessionId)).toEqual([]);
    expect((await sessionRow(db, sessionId)).earliest_sequence).toBe(7);
  });
  it('moves a bound that is behind the journal up to its oldest event, reading the session once', async () => {
    const { session_id: sessionId } = await admit(db, { turnId: 'bound_0', message: 'new' });
    // `journal_since` is a lower bound: here far below the session's only (new) event.
    await db.query(
      `update sessions set journal_since = now() - interval '3 days' where session_id = $1`,
      [sessionId],
    );
    const options = {
      olderThan: new Date(Date.now() - 86_400_000),
      tenant: null,
      batchSize: 10,
      followers: noFollowers,
    };
    expect(await db.transaction((tx) => pruneEventsBatch(tx, options))).toEqual({
      removed: { events: 0 },
      done: false,
      journals: 0,
    });
    expect(await boundAndOldest(sessionId)).toEqual({ bound: true, equal: true });
    // Its bound is now its event's time: the next look finds nothing to read.
    expect(await db.transaction((tx) => pruneEventsBatch(tx, options))).toEqual({
      removed: { events: 0 },
      done: true,
    });
    expect(await journal(db, sessionId)).toHaveLength(1);
  });

  it('bounds a journal pruned whole by the time of the cut, below what it journals later', async () => {
    const { session_id: sessionId } = await admit(db, { turnId: 'whole_0', message: 'old' });
    await db.query(`update events set at = now() - interval '2 days' where session_id = $1`, [
      sessionId,
    ]);
    await db.query(
      `update sessions set journal_since = now() - interval '2 days' where session_id = $1`,
      [sessionId],
    );
    const olderThan = new Date(Date.now() - 86_400_000);
    expect(await pruneEvents(db, { olderThan })).toEqual({
      sessions: 1,
      events: 1,
      skipped: false,
    });
    const cut = (
      await db.query<{ journal_since: Date }>(
        'select journal_since from sessions where session_id = $1',
        [sessionId],
      )
    ).rows[0]!.journal_since;
    expect(cut.getTime()).toBeGreaterThan(olderThan.getTime());
    await admit(db, { sessionId, turnId: 'whole_1', message: 'later' });
    expect(await boundAndOldest(sessionId)).toEqual({ bound: true, equal: false });
  });
});

/** Whether the session's `journal_since` is at or below its oldest event's time, and equal to it. */
async function boundAndOldest(sessionId: string): Promise<{ bound: boolean; equal: boolean }> {
  const row = (
    await db.query<{ bound: boolean; equal: boolean }>(
      `select s.journal_since <= min(e.at) as bound, s.journal_since = min(e.at) as equal
         from sessions s join events e on e.session_id = s.session_id
        where s.session_id = $1
        group by s.journal_since`,
      [sessionId],
    )
  ).rows[0];
  return row!;
}
