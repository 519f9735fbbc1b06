import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { configAgents, type AgentLookup } from '../src/agents/lookup.js';
import { createLogger } from '../src/log.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { Worker } from '../src/runtime/worker.js';
import { claimSession } from '../src/store/claimSession.js';
import { builtInTools } from '../src/tools/registry.js';
import { currentDefinitionRevision } from '../src/store/currentDefinitionRevision.js';
import type { Db } from '../src/store/db.js';
import { startAttempt } from '../src/store/startAttempt.js';
import type { SessionRow } from '../src/store/types.js';
import { Wakeups, type Wakeup } from '../src/store/wakeups.js';
import { openTestDb } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import {
  admit,
  journal,
  runtimeConfig,
  sessionRow,
  waitForTerminal,
} from './support/runtime-helpers.js';

/**
 * The claim that also starts a fresh burst's attempt (claimSession with `start`): it must
 * journal what `startAttempt` journals, wake readers with the same event, and leave every
 * burst that is not fresh to `startAttempt`.
 */

let db: Db;
let closeDb: () => Promise<void>;
let wakeups: Wakeups;
const received: Wakeup[] = [];
let counter = 0;
const turnId = () => `claimstart_${Date.now()}_${counter++}`;
const parkAfterAttempts = 3;

beforeAll(async () => {
  ({ db, close: closeDb } = await openTestDb());
  wakeups = new Wakeups(db);
  await wakeups.start();
  wakeups.subscribe((wakeup) => received.push(wakeup));
});
afterEach(async () => {
  // Claims take "any claimable session": retire what a test left pending.
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

const claim = (token: string, start = true) =>
  claimSession(
    db,
    { token, owner: `owner_${token}`, ttlMs: 10_000, maxTurns: 50 },
    start ? { parkAfterAttempts } : undefined,
  );

async function turnsOf(sessionId: string) {
  const found = await db.query<{ turn_id: string; state: string; agent_revision: number | null }>(
    'select turn_id, state, agent_revision from turns where session_id = $1 order by position',
    [sessionId],
  );
  return found.rows.map((row) => ({
    ...row,
    agent_revision: row.agent_revision === null ? null : Number(row.agent_revision),
  }));
}

/** A session with two queued turns (the second admitted while the first queued). */
async function twoQueued(): Promise<{ sessionId: string; turnIds: string[] }> {
  const first = turnId();
  const second = turnId();
  const { session_id: sessionId } = await admit(db, { turnId: first, message: 'one' });
  await admit(db, { sessionId, turnId: second, message: 'two' });
  return { sessionId, turnIds: [first, second] };
}

/** A stored (shipped) definition of the session's agent, and its current revision. */
async function storedDefinition(session: SessionRow): Promise<number | null> {
  await db.query(
    `insert into definitions (kind, tenant, name, definition, content_hash, is_customized)
     values ('agent', '', $1, '{}', 'test', false) on conflict do nothing`,
    [session.agent],
  );
  return currentDefinitionRevision(db, {
    kind: 'agent',
    tenant: session.tenant,
    name: session.agent,
  });
}

describe('a claim that starts a fresh burst', () => {
  it('journals turn_started as startAttempt does, runs the turns, and wakes readers with it', async () => {
    const { sessionId, turnIds } = await twoQueued();
    const before = await sessionRow(db, sessionId);
    // A stored definition of the session's agent: its revision is what the turns record.
    const revision = await storedDefinition(before);
    const claimed = await claim('fused');
    expect(claimed?.session_id).toBe(sessionId);
    const sequence = Number(before.last_sequence) + 1;
    expect(claimed?.started).toEqual({
      sequence,
      attempt: 1,
      turn_ids: turnIds,
      agent_revision: revision,
    });
    expect(claimed?.queued.map((turn) => turn.turn_id)).toEqual(turnIds);

    const events = await journal(db, sessionId);
    const started = events.at(-1);
    expect(revision).not.toBeNull();
    expect(started).toEqual({
      type: 'turn_started',
      sequence,
      at: expect.any(String),
      turn_id: turnIds[0],
      attempt: 1,
      turn_ids: turnIds,
      agent: before.agent,
      agent_revision: revision,
    });
    expect(await turnsOf(sessionId)).toEqual(
      turnIds.map((id) => ({ turn_id: id, state: 'running', agent_revision: revision })),
    );
    const row = await sessionRow(db, sessionId);
    expect(row).toMatchObject({
      lease_token: 'fused',
      state: 'running',
      attempt: 1,
      current_turn_id: turnIds[0],
      claim_count: 1,
    });
    expect(Number(row.last_sequence)).toBe(sequence);

    // The wake-up carries the event exactly as a replay from the journal gives it.
    const wakeup = await until(
      () =>
        received.find(
          (seen) =>
            seen.kind === 'events' && seen.sessionId === sessionId && seen.sequence === sequence,
        ),
      (found) => found !== undefined,
      'the wake-up of turn_started',
    );
    expect(JSON.stringify(wakeup?.events())).toBe(JSON.stringify([started]));
  });

  it('journals the same event as a claim followed by startAttempt', async () => {
    const fused = await twoQueued();
    await claim('fused_again');
    const plain = await twoQueued();
    const claimed = (await claim('plain', false)) as SessionRow & { started: unknown };
    expect(claimed.started).toBeNull();
    expect((await journal(db, plain.sessionId)).at(-1)?.type).not.toBe('turn_started');
    await startAttempt(
      db,
      { sessionId: plain.sessionId, tenant: claimed.tenant, token: 'plain' },
      {
        turnIds: plain.turnIds,
        attempt: 1,
        resetPrevious: false,
        seenSequence: Number(claimed.last_sequence),
        historyBefore: 1,
        historyLimit: 10,
        historyBytes: 10_000,
        agent: claimed.agent,
        agentRevision: await currentDefinitionRevision(db, {
          kind: 'agent',
          tenant: claimed.tenant,
          name: claimed.agent,
        }),
      },
    );
    const shape = (events: Awaited<ReturnType<typeof journal>>) => {
      const {
        at: _at,
        sequence: _sequence,
        turn_id: _turn,
        ...rest
      } = events.at(-1) as Record<string, unknown>;
      return { ...rest, turn_ids: (rest.turn_ids as string[]).length };
    };
    expect(shape(await journal(db, fused.sessionId))).toEqual(
      shape(await journal(db, plain.sessionId)),
    );
    expect(await turnsOf(fused.sessionId)).toEqual(
      (await turnsOf(plain.sessionId)).map((turn, index) => ({
        ...turn,
        turn_id: fused.turnIds[index],
      })),
    );
  });

  const notFresh: [string, (sessionId: string) => Promise<unknown>][] = [
    [
      'a cancel is pending',
      (id) =>
        db.query(`update sessions set cancel_command_id = 'cmd_pending' where session_id = $1`, [
          id,
        ]),
    ],
    [
      'a burst is saved (it waited for a person)',
      (id) => db.query(`update sessions set burst = '{}'::jsonb where session_id = $1`, [id]),
    ],
    [
      'an earlier attempt left partial output',
      (id) =>
        db.query(`update sessions set partial_output = true, attempt = 1 where session_id = $1`, [
          id,
        ]),
    ],
    [
      'the claim reaches the parking limit',
      (id) =>
        db.query(`update sessions set claim_count = $2 where session_id = $1`, [
          id,
          parkAfterAttempts,
        ]),
    ],
    [
      'a turn recorded an agent revision',
      (id) => db.query(`update turns set agent_revision = 1 where session_id = $1`, [id]),
    ],
  ];
  it.each(notFresh)('leaves the start to startAttempt when %s', async (_case, prepare) => {
    const { sessionId, turnIds } = await twoQueued();
    await prepare(sessionId);
    const before = await sessionRow(db, sessionId);
    const claimed = await claim(`not_fresh_${counter++}`);
    expect(claimed?.session_id).toBe(sessionId);
    expect(claimed?.started).toBeNull();
    expect(claimed?.queued.map((turn) => turn.turn_id)).toEqual(turnIds);
    const row = await sessionRow(db, sessionId);
    expect(Number(row.last_sequence)).toBe(Number(before.last_sequence));
    expect(row.attempt).toBe(before.attempt);
    expect((await turnsOf(sessionId)).map((turn) => turn.state)).toEqual(['queued', 'queued']);
  });
});

describe('a worker whose directory cannot load the revision the claim journaled', () => {
  it('resets that attempt and starts the next with the revision it runs, saying which it could not keep', async () => {
    const { sessionId, turnIds } = await twoQueued();
    const before = await sessionRow(db, sessionId);
    const stored = (await storedDefinition(before)) as number;
    // The directory holds another revision and cannot compile the stored one.
    const current = stored + 1;
    const config = runtimeConfig();
    const shipped = configAgents(config);
    const agents: AgentLookup = {
      ...shipped,
      revision: () => current,
      pinned: async () => null,
    };
    const worker = new Worker({
      db,
      wakeups,
      config,
      resolveModel: createModelRegistry(config),
      log: createLogger({ level: 'silent' }),
      owner: 'unpinned-worker',
      tools: builtInTools(),
      agents,
    });
    worker.start();
    try {
      await waitForTerminal(db, sessionId, turnIds[0] as string);
    } finally {
      await worker.stop();
    }
    const events = await journal(db, sessionId);
    const since = events.filter((event) => event.sequence > Number(before.last_sequence));
    expect(since.map((event) => event.type).slice(0, 3)).toEqual([
      'turn_started',
      'attempt_reset',
      'turn_started',
    ]);
    expect(since[0]).toMatchObject({ attempt: 1, agent_revision: stored });
    expect(since[0]).not.toHaveProperty('unpinned_revision');
    expect(since[1]).toMatchObject({ attempt: 1 });
    expect(since[2]).toMatchObject({
      attempt: 2,
      turn_ids: turnIds,
      agent_revision: current,
      unpinned_revision: stored,
    });
    expect(since.at(-1)?.type).toBe('done');
    expect((await turnsOf(sessionId)).map((turn) => turn.agent_revision)).toEqual([
      current,
      current,
    ]);
  });
});
