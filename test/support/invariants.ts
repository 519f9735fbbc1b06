import { expect } from 'vitest';
import type { Db, Queryable } from '../../src/store/db.js';

/**
 * The journal invariants of RUNTIME.md, checked over a whole database:
 * - sequences per session are gapless from earliest_sequence to last_sequence;
 * - every admitted turn is named by exactly one terminal event (done/cancelled/error);
 * - no duplicate transcript rows (one user message per turn, at most one reply per lead);
 * - finished turns and the session cursor agree.
 * All reads see one snapshot (REPEATABLE READ): a worker may still be writing while the
 * check runs, and a check that read sessions and events at different moments would see
 * events past the counter it read first.
 */
export async function checkJournalInvariants(db: Db): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('set transaction isolation level repeatable read');
    await checkSnapshot(tx);
  });
}

async function checkSnapshot(db: Queryable): Promise<void> {
  const sessions = await db.query<{
    session_id: string;
    last_sequence: number;
    earliest_sequence: number;
  }>('select session_id, last_sequence, earliest_sequence from sessions');
  for (const session of sessions.rows) {
    const sequences = await db.query<{ sequence: number }>(
      'select sequence from events where session_id = $1 order by sequence',
      [session.session_id],
    );
    const expected = [];
    for (let sequence = session.earliest_sequence; sequence <= session.last_sequence; sequence++) {
      expected.push(sequence);
    }
    expect(
      sequences.rows.map((row) => row.sequence),
      `gapless journal of ${session.session_id}`,
    ).toEqual(expected);
  }

  const terminal = await db.query<{ turn_id: string }>(
    `select jsonb_array_elements_text(coalesce(payload->'turn_ids', jsonb_build_array(turn_id))) as turn_id
       from events where type in ('done', 'cancelled', 'error')`,
  );
  const named = new Map<string, number>();
  for (const row of terminal.rows) named.set(row.turn_id, (named.get(row.turn_id) ?? 0) + 1);
  // Turns of sessions whose journal was pruned may have lost their terminal event legally.
  const turns = await db.query<{ turn_id: string; state: string }>(
    `select t.turn_id, t.state from turns t join sessions s on s.session_id = t.session_id
      where s.earliest_sequence = 1`,
  );
  for (const turn of turns.rows) {
    const count = named.get(turn.turn_id) ?? 0;
    if (turn.state === 'queued' || turn.state === 'running' || turn.state === 'stored') {
      expect(count, `unfinished turn or stored post ${turn.turn_id} has no terminal event`).toBe(0);
    } else {
      expect(
        count,
        `turn ${turn.turn_id} (${turn.state}) is named by exactly one terminal event`,
      ).toBe(1);
    }
  }
  const allTurns = new Set(
    (await db.query<{ turn_id: string }>('select turn_id from turns')).rows.map(
      (row) => row.turn_id,
    ),
  );
  for (const turnId of named.keys())
    expect(allTurns.has(turnId), `terminal event names a real turn`).toBe(true);

  const duplicates = await db.query(
    `select session_id, turn_id, role, count(*) from messages
      where turn_id is not null group by session_id, turn_id, role having count(*) > 1`,
  );
  expect(duplicates.rows, 'no duplicate transcript rows').toEqual([]);
  const userRows = await db.query<{ missing: number }>(
    `select count(*)::int as missing from turns t
      where not exists (select 1 from messages m
                         where m.session_id = t.session_id and m.sequence = t.admitted_sequence
                           and m.role = 'user' and m.turn_id = t.turn_id)`,
  );
  expect(userRows.rows[0]?.missing, 'every turn has its user message').toBe(0);
}

/** Every turn admitted so far has finished (done, error or cancelled). */
export async function allTurnsFinished(db: Queryable): Promise<boolean> {
  const open = await db.query<{ open: number }>(
    `select count(*)::int as open from turns where state in ('queued', 'running')`,
  );
  return open.rows[0]?.open === 0;
}
