import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { configAgents, type AgentLookup } from '../src/agents/lookup.js';
import { createLogger } from '../src/log.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { Worker } from '../src/runtime/worker.js';
import { admitTurn, type AdmitTurnInput } from '../src/store/admitTurn.js';
import { currentDefinitionRevision } from '../src/store/currentDefinitionRevision.js';
import { claimedContext, readHistory } from '../src/store/readHistory.js';
import type { Db } from '../src/store/db.js';
import { Wakeups, type Wakeup } from '../src/store/wakeups.js';
import { builtInTools } from '../src/tools/registry.js';
import { openTestDb } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import {
  admit,
  admitInput,
  journal,
  runtimeConfig,
  sessionRow,
  waitForTerminal,
} from './support/runtime-helpers.js';

/**
 * An admission that claims its session for a worker of its own process (AdmitTurnInput
 * `claim`): when the turn is the session's only work and no one holds the session, the
 * admission statement claims it and starts the turn's attempt exactly as the claim loop's
 * claim would; otherwise it admits as before and leaves the turn to the claim loop.
 */

let db: Db;
let closeDb: () => Promise<void>;
let wakeups: Wakeups;
const received: Wakeup[] = [];
let counter = 0;
const turnId = () => `admitclaim_${Date.now()}_${counter++}`;
const parkAfterAttempts = 3;
/** The history window the slots of these cases read with their claim. */
const window = { limit: 50, bytes: 100_000 };

beforeAll(async () => {
  ({ db, close: closeDb } = await openTestDb());
  wakeups = new Wakeups(db);
  await wakeups.start();
  wakeups.subscribe((wakeup) => received.push(wakeup));
  // A stored definition of the default agent: its revision is what a started turn records.
  await db.query(
    `insert into definitions (kind, tenant, name, definition, content_hash, is_customized)
     values ('agent', '', 'default', '{}', 'test', false) on conflict do nothing`,
  );
});
afterEach(async () => {
  // Leave no session claimable for the worker of the last case.
  await db.query(
    `update sessions set input_cursor = input_count, lease_token = null, lease_owner = null,
            lease_expires_at = null, state = 'closed'
      where input_count > input_cursor`,
  );
});
afterAll(async () => {
  await wakeups?.stop();
  if (db) {
    await checkJournalInvariants(db);
    await closeDb();
  }
});

function claimInput(
  sessionId: string,
  id: string,
  token: string,
  extra: Partial<AdmitTurnInput> = {},
): AdmitTurnInput {
  return {
    ...admitInput({ sessionId, turnId: id, message: `message of ${id}` }),
    claim: {
      token,
      owner: `owner_${token}`,
      ttlMs: 10_000,
      parkAfterAttempts,
      maxTurns: 50,
      history: window,
    },
    ...extra,
  };
}

/** A session that holds one stored message: idle, nothing queued, no lease. */
async function idleSession(): Promise<string> {
  const created = await admitTurn(db, {
    ...claimInput('', turnId(), 'none', { triggers: new Map([['default', false]]) }),
    sessionId: null,
  });
  return created.session_id;
}

/** What the worker reads for a start whose first message is at `before` (readHistory). */
function historyAt(sessionId: string, before: number, bytes: number) {
  return readHistory(db, {
    sessionId,
    tenant: 'default',
    historyBefore: before,
    historyLimit: window.limit,
    historyBytes: bytes,
    authors: ['local'],
  });
}

async function turnsOf(sessionId: string) {
  const found = await db.query<{ turn_id: string; state: string; agent_revision: number | null }>(
    'select turn_id, state, agent_revision from turns where session_id = $1 order by admitted_sequence',
    [sessionId],
  );
  return found.rows.map((row) => ({
    ...row,
    agent_revision: row.agent_revision === null ? null : Number(row.agent_revision),
  }));
}

describe('an admission that claims its session', () => {
  it('claims an idle session and starts the turn as the claim would, waking readers with both events', async () => {
    const sessionId = await idleSession();
    const before = await sessionRow(db, sessionId);
    const revision = await currentDefinitionRevision(db, {
      kind: 'agent',
      tenant: 'default',
      name: before.agent,
    });
    expect(revision).not.toBeNull();
    const id = turnId();
    const admission = await admitTurn(db, claimInput(sessionId, id, 'admitted'));
    const sequence = Number(before.last_sequence) + 1;
    expect(admission).toMatchObject({
      session_id: sessionId,
      turn_id: id,
      sequence,
      state: 'accepted',
    });
    const claimed = admission.claimed;
    expect(claimed).toMatchObject({
      session_id: sessionId,
      lease_token: 'admitted',
      lease_owner: 'owner_admitted',
      state: 'running',
      claim_count: before.claim_count + 1,
      attempt: before.attempt + 1,
      current_turn_id: id,
      cancel_command_id: null,
      burst: null,
      partial_output: false,
    });
    expect(Number(claimed?.last_sequence)).toBe(sequence + 1);
    expect(claimed?.lease_expires_at).toBeInstanceOf(Date);
    const { context, ...started } = claimed?.started ?? {};
    expect(started).toEqual({
      sequence: sequence + 1,
      attempt: before.attempt + 1,
      turn_ids: [id],
      agent_revision: revision,
    });
    // What the burst's start reads, read with the claim: the stored message before it.
    const { read, ...readWithClaim } = context ?? { read: null };
    expect(read).toEqual({ before: sequence, ...window, authors: ['local'] });
    expect(readWithClaim).toEqual(await historyAt(sessionId, sequence, window.bytes));
    expect(context?.history.map((message) => message.role)).toEqual(['user']);
    expect(claimed?.queued).toEqual([
      expect.objectContaining({
        turn_id: id,
        position: Number(before.input_count) + 1,
        admitted_sequence: sequence,
        author: 'local',
        content: `message of ${id}`,
        option: null,
        attachments: null,
      }),
    ]);

    const events = await journal(db, sessionId);
    expect(events.slice(-2).map((event) => [event.type, event.sequence])).toEqual([
      ['message', sequence],
      ['turn_started', sequence + 1],
    ]);
    expect(events.at(-2)?.message.id).toBe(claimed?.queued[0]?.message_id);
    expect(events.at(-1)).toEqual({
      type: 'turn_started',
      sequence: sequence + 1,
      at: expect.any(String),
      turn_id: id,
      attempt: before.attempt + 1,
      turn_ids: [id],
      agent: before.agent,
      agent_revision: revision,
    });
    expect((await turnsOf(sessionId)).at(-1)).toEqual({
      turn_id: id,
      state: 'running',
      agent_revision: revision,
    });
    const row = await sessionRow(db, sessionId);
    expect(row).toMatchObject({ lease_token: 'admitted', state: 'running', current_turn_id: id });
    expect(Number(row.input_count)).toBe(Number(before.input_count) + 1);
    expect(Number(row.input_cursor)).toBe(Number(before.input_cursor));

    // One wake-up for readers, with both events as a replay gives them; none for claimers.
    const wakeup = await until(
      () => received.find((seen) => seen.sessionId === sessionId && seen.sequence === sequence + 1),
      (found) => found !== undefined,
      'the wake-up of the admission',
    );
    expect(wakeup?.kind).toBe('events');
    expect(JSON.stringify(wakeup?.events())).toBe(JSON.stringify(events.slice(-2)));
    expect(received.some((seen) => seen.sessionId === sessionId && seen.kind === 'input')).toBe(
      false,
    );
  });

  const notClaimed: [string, (sessionId: string) => Promise<unknown>][] = [
    [
      'another worker holds its lease',
      (id) =>
        db.query(
          `update sessions set lease_token = 'theirs', lease_owner = 'them',
                  lease_expires_at = now() + interval '1 minute' where session_id = $1`,
          [id],
        ),
    ],
    [
      'a turn is queued before it',
      (id) => admit(db, { sessionId: id, turnId: turnId(), message: 'queued' }),
    ],
    [
      'a cancel is pending',
      (id) =>
        db.query(`update sessions set cancel_command_id = 'cmd_pending' where session_id = $1`, [
          id,
        ]),
    ],
    [
      'an earlier attempt left partial output',
      (id) => db.query(`update sessions set partial_output = true where session_id = $1`, [id]),
    ],
    [
      'the claim would reach the parking limit',
      (id) =>
        db.query(`update sessions set claim_count = $2 where session_id = $1`, [
          id,
          parkAfterAttempts,
        ]),
    ],
  ];
  it.each(notClaimed)('admits as before, for the claim loop, when %s', async (_case, prepare) => {
    const sessionId = await idleSession();
    await prepare(sessionId);
    const before = await sessionRow(db, sessionId);
    const id = turnId();
    const admission = await admitTurn(db, claimInput(sessionId, id, `not_${counter++}`));
    expect(admission.claimed).toBeUndefined();
    expect(admission.sequence).toBe(Number(before.last_sequence) + 1);
    const row = await sessionRow(db, sessionId);
    expect(row.lease_token).toBe(before.lease_token);
    expect(row.attempt).toBe(before.attempt);
    expect(Number(row.last_sequence)).toBe(admission.sequence);
    expect((await journal(db, sessionId)).at(-1)?.type).toBe('message');
    expect((await turnsOf(sessionId)).at(-1)).toMatchObject({ turn_id: id, state: 'queued' });
    await until(
      () =>
        received.find(
          (seen) => seen.sessionId === sessionId && seen.sequence === admission.sequence,
        ),
      (found) => found?.kind === 'input',
      'the input wake-up for the claim loop',
    );
  });

  it('reads the burst’s history, budgets and preferences with the claim, as the worker would, cut to its agent’s window', async () => {
    const sessionId = await idleSession();
    for (const size of [40, 300, 7, 120]) {
      await admitTurn(
        db,
        claimInput(sessionId, turnId(), 'none', {
          message: 'x'.repeat(size),
          triggers: new Map([['default', false]]),
        }),
      );
    }
    await db.query(
      `insert into users (tenant, user_name, preferences) values ('default', 'local', $1)
       on conflict (tenant, user_name) do update set preferences = excluded.preferences`,
      [JSON.stringify({ tone: 'dry' })],
    );
    await db.query(
      `insert into budgets (tenant, budget_id, scope, metric, period, limit_value)
       values ('default', 'history_read', 'tenant', 'tokens', 'month', 1000000000)`,
    );
    try {
      const admission = await admitTurn(db, claimInput(sessionId, turnId(), 'context'));
      const context = admission.claimed?.started?.context;
      expect(context?.history).toHaveLength(5);
      expect(context).toMatchObject({ budgeted: true, preferences: { local: { tone: 'dry' } } });
      const read = {
        historyBefore: admission.sequence,
        historyLimit: window.limit,
        authors: ['local'],
      };
      // Any agent's window no wider than the read's: what readHistory answers for it.
      for (const bytes of [0, 1, 120, 127, 128, 200, 500, window.bytes]) {
        const mine = claimedContext(context, { ...read, historyBytes: bytes });
        expect(mine).toEqual(await historyAt(sessionId, admission.sequence, bytes));
      }
      expect(claimedContext(context, { ...read, historyBytes: 127 })?.history).toHaveLength(2);
      // Not what this start reads: read again.
      for (const other of [
        { historyBefore: admission.sequence - 1 },
        { historyLimit: window.limit - 1 },
        { historyBytes: window.bytes + 1 },
        { authors: ['someone'] },
        { authors: ['local', 'someone'] },
      ]) {
        expect(claimedContext(context, { ...read, historyBytes: 100, ...other })).toBeNull();
      }
    } finally {
      await db.query(`delete from budgets where budget_id = 'history_read'`);
      await db.query(`delete from users where tenant = 'default' and user_name = 'local'`);
    }
  });

  it('claims nothing for a message that triggers no turn', async () => {
    const sessionId = await idleSession();
    const admission = await admitTurn(
      db,
      claimInput(sessionId, turnId(), 'stored', { triggers: new Map([['default', false]]) }),
    );
    expect(admission.state).toBe('stored');
    expect(admission.claimed).toBeUndefined();
    expect((await sessionRow(db, sessionId)).lease_token).toBeNull();
  });

  it('answers a retry of the admitted turn as before, without claiming again', async () => {
    const sessionId = await idleSession();
    const id = turnId();
    const first = await admitTurn(db, claimInput(sessionId, id, 'retried'));
    expect(first.claimed).toBeDefined();
    const again = await admitTurn(db, claimInput(sessionId, id, 'retried_again'));
    expect(again).toEqual({
      session_id: sessionId,
      turn_id: id,
      sequence: first.sequence,
      state: 'accepted',
    });
    expect((await sessionRow(db, sessionId)).lease_token).toBe('retried');
  });
});

describe('an admission that takes the transaction path and claims its session', () => {
  it('claims a session it creates, journals turn_started after the message, and wakes readers once committed', async () => {
    const id = turnId();
    const admission = await admitTurn(db, {
      ...claimInput('', id, 'created'),
      sessionId: null,
    });
    const sessionId = admission.session_id;
    expect(admission.claimed).toMatchObject({
      session_id: sessionId,
      lease_token: 'created',
      state: 'running',
      claim_count: 1,
      attempt: 1,
      current_turn_id: id,
    });
    expect(admission.claimed?.queued.map((turn) => turn.turn_id)).toEqual([id]);
    expect(admission.claimed?.started).toMatchObject({
      sequence: admission.sequence + 1,
      attempt: 1,
      turn_ids: [id],
    });
    const events = await journal(db, sessionId);
    expect(events.map((event) => [event.type, event.sequence])).toEqual([
      ['message', admission.sequence],
      ['turn_started', admission.sequence + 1],
    ]);
    expect((await turnsOf(sessionId)).map((turn) => turn.state)).toEqual(['running']);
    await until(
      () =>
        received.find(
          (seen) => seen.sessionId === sessionId && seen.sequence === admission.sequence + 1,
        ),
      (found) => found?.kind === 'events',
      'the wake-up of turn_started',
    );
    expect(received.some((seen) => seen.sessionId === sessionId && seen.kind === 'input')).toBe(
      false,
    );
  });

  it('leaves a session another worker holds to it, and wakes it with the input', async () => {
    const sessionId = await idleSession();
    await db.query(
      `update sessions set lease_token = 'theirs', lease_owner = 'them',
              lease_expires_at = now() + interval '1 minute' where session_id = $1`,
      [sessionId],
    );
    const id = turnId();
    // Instructions take the transaction path.
    const admission = await admitTurn(
      db,
      claimInput(sessionId, id, 'held', { instructions: 'Be brief.' }),
    );
    expect(admission.claimed).toBeUndefined();
    expect((await sessionRow(db, sessionId)).lease_token).toBe('theirs');
    expect((await journal(db, sessionId)).at(-1)?.type).toBe('message');
    expect((await turnsOf(sessionId)).at(-1)).toMatchObject({ turn_id: id, state: 'queued' });
    await until(
      () =>
        received.some(
          (seen) =>
            seen.sessionId === sessionId &&
            seen.sequence === admission.sequence &&
            seen.kind === 'input',
        ),
      (found) => found,
      'the input wake-up for the lease holder',
    );
  });
});

describe('a worker handed a session its process admitted', () => {
  it('answers the turn under the admission’s lease, and holds to its capacity', async () => {
    const config = runtimeConfig({ runtime: { max_parallel_turns: 1 } });
    const shipped = configAgents(config);
    const revision = await currentDefinitionRevision(db, {
      kind: 'agent',
      tenant: 'default',
      name: 'default',
    });
    const agents: AgentLookup = { ...shipped, revision: () => revision };
    // The worker's statements, by name: a handed burst reads no history of its own.
    const ran: string[] = [];
    const counted: Db = Object.create(db);
    counted.query = (statement, params) => {
      if (typeof statement !== 'string') ran.push(statement.name);
      return db.query(statement, params);
    };
    const worker = new Worker({
      db: counted,
      wakeups,
      config,
      resolveModel: createModelRegistry(config),
      log: createLogger({ level: 'silent' }),
      owner: 'handoff-worker',
      tools: builtInTools(),
      agents,
    });
    const sessionId = await idleSession();
    expect(worker.reserveSession('default')).toBeNull();
    worker.start();
    try {
      // Free once the loop's first claim (which may fill every slot) is over.
      const slot = await until(
        () => worker.reserveSession('default'),
        (found) => found !== null,
        'a free slot',
      );
      expect(slot?.claim).toMatchObject({
        owner: 'handoff-worker',
        parkAfterAttempts: config.runtime.parkAfterAttempts,
        // The widest of the tenant's agents' windows (the shipped agent's model: unknown).
        history: { limit: config.runtime.historyMessages, bytes: 16_384 * 4 },
      });
      // Its one slot is held: no other.
      expect(worker.reserveSession('default')).toBeNull();
      const id = turnId();
      const admission = await admitTurn(
        db,
        claimInput(sessionId, id, 'unused', { claim: slot?.claim }),
      );
      expect(admission.claimed?.lease_owner).toBe('handoff-worker');
      slot?.adopt(admission.claimed!);
      expect(worker.activeSessions).toBe(1);
      await waitForTerminal(db, sessionId, id);
      const since = (await journal(db, sessionId)).filter(
        (event) => event.sequence >= admission.sequence,
      );
      expect(since.slice(0, 2).map((event) => event.type)).toEqual(['message', 'turn_started']);
      expect(since.at(-1)?.type).toBe('done');
      expect(since.filter((event) => event.type === 'turn_started')).toHaveLength(1);
      expect(admission.claimed?.started?.context).toBeDefined();
      expect(ran).toContain('commit_turn');
      expect(ran).not.toContain('read_history');
      await until(
        () => sessionRow(db, sessionId),
        (row) => row.lease_token === null,
        'the lease given back',
      );
      expect(await turnsOf(sessionId)).toContainEqual({
        turn_id: id,
        state: 'done',
        agent_revision: revision,
      });
    } finally {
      await worker.stop();
    }
    expect(worker.reserveSession('default')).toBeNull();
  });
});
