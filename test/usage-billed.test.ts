import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimSession } from '../src/store/claimSession.js';
import { commitTurn } from '../src/store/commitTurn.js';
import type { Db } from '../src/store/db.js';
import { startAttempt } from '../src/store/startAttempt.js';
import type { Lease } from '../src/store/types.js';
import type { Usage } from '../src/store/usageRows.js';
import { openTestDb } from './support/db.js';
import { admit } from './support/runtime-helpers.js';

/**
 * Whom `commit_turn` bills a turn's usage to: the user the worker read with the turn, as
 * given; only when none is given does the statement look for the turn's author itself.
 */
describe("a committed turn's usage rows", () => {
  let db: Db;
  let close: () => Promise<void>;

  beforeEach(async () => {
    ({ db, close } = await openTestDb());
  });

  afterEach(async () => {
    await close();
  });

  const call: Usage = {
    input_tokens: 3,
    output_tokens: 5,
    cached_input_tokens: 0,
    reasoning_tokens: 0,
    cost_usd: 0,
    model: 'demo/echo',
    latency_ms: 1,
    ttft_ms: null,
    purpose: 'reply',
    outcome: 'ok',
  };

  async function commitOne(turnId: string, user: string): Promise<string | null> {
    const { session_id: sessionId } = await admit(db, { turnId, message: 'hello' });
    const claimed = await claimSession(db, {
      token: `token_${turnId}`,
      owner: 'test',
      ttlMs: 10_000,
      maxTurns: 10,
    });
    const lease: Lease = { sessionId, tenant: 'default', token: `token_${turnId}` };
    expect(claimed?.session_id).toBe(sessionId);
    const started = await startAttempt(db, lease, {
      turnIds: [turnId],
      attempt: 1,
      resetPrevious: false,
      seenSequence: claimed?.last_sequence as number,
      historyBefore: claimed?.queued[0]?.admitted_sequence as number,
      historyLimit: 10,
      historyBytes: 0,
      authors: ['local'],
      agent: 'default',
      agentRevision: null,
      unpinnedRevision: null,
    });
    expect(started).not.toBe('changed');
    const committed = await commitTurn(db, lease, {
      turnIds: [turnId],
      lastPosition: 1,
      messageId: `msg_${turnId}`,
      author: 'default',
      content: 'hi',
      rawContent: null,
      options: null,
      usage: [call],
      tail: [],
      user,
    });
    expect(committed).toMatchObject({ pending: false });
    const rows = await db.query<{ user_name: string | null }>(
      'select user_name from usage where turn_id = $1',
      [turnId],
    );
    expect(rows.rows).toHaveLength(1);
    return rows.rows[0]?.user_name ?? null;
  }

  it('are billed to the user the worker gives', async () => {
    // The turn was admitted by `local`; the worker says whom it answered.
    expect(await commitOne('ub_given', 'carol')).toBe('carol');
  });
});
