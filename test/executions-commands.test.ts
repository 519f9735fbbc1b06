import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitIteration, iterationTurnId } from '../src/missions/iteration.js';
import { cancelExecution } from '../src/store/cancelExecution.js';
import {
  claimExecutions,
  ExecutionLeaseLostError,
  type ClaimedExecution,
  type ExecutionLease,
} from '../src/store/claimExecutions.js';
import { createExecution } from '../src/store/createExecution.js';
import { createSession } from '../src/store/createSession.js';
import type { Db } from '../src/store/db.js';
import { getExecution } from '../src/store/getExecution.js';
import { saveExecution, type ExecutionState } from '../src/store/saveExecution.js';
import { unblockExecution } from '../src/store/unblockExecution.js';
import { wakeExecution } from '../src/store/wakeExecution.js';
import { newSessionId } from '../src/ids.js';
import { engine, openTestDb } from './support/db.js';
import { until } from './support/poll.js';

// A person's command on an execution against a runner's step in flight on the same row
// (store functions driven in the order that used to lose, then raced for real), and
// wake-ups that name an execution id of another tenant.

let db: Db;
let close: () => Promise<void>;
let counter = 0;

beforeAll(async () => {
  ({ db, close } = await openTestDb());
});
afterAll(async () => {
  await close();
});

async function dispatch(tenant = 'default'): Promise<string> {
  const executionId = `cmd_${counter++}`;
  await createExecution(db, {
    tenant,
    executionId,
    user: 'alice',
    mission: 'watch',
    agent: 'default',
    visibility: 'tenant',
    input: {},
    spec: { prompt: 'Watch the feed.', loop_prompt: 'Is it done?', loop_delay_seconds: 0 },
    threads: null,
    maxIterations: 5,
    interruptTo: null,
    priority: 1,
    timeoutSeconds: null,
  });
  return executionId;
}

/** The row as a loop the evaluation found blocked, with a timer (its timeout) due now. */
async function blockedAndDue(executionId: string): Promise<void> {
  await db.query(
    `update executions
        set status = 'blocked', loop_status = 'blocked', iteration = 1,
            next_run_at = now() - interval '1 second', timeout_at = now() + interval '1 hour'
      where tenant = 'default' and execution_id = $1`,
    [executionId],
  );
}

async function claim(executionId: string, ttlMs = 60_000): Promise<ClaimedExecution> {
  const claimed = await claimExecutions(db, {
    token: `token_${executionId}`,
    owner: 'test',
    ttlMs,
    limit: 10,
  });
  const mine = claimed.find((row) => row.execution_id === executionId);
  expect(mine, `claimed ${executionId}`).toBeDefined();
  return mine as ClaimedExecution;
}

const leaseOf = (row: ClaimedExecution): ExecutionLease => ({
  tenant: row.tenant,
  executionId: row.execution_id,
  token: row.lease_token as string,
});

/** What the runner's step saves for a blocked loop it found due: the claim-time state. */
const stateOf = (row: ClaimedExecution): ExecutionState => ({
  status: row.status,
  loop_status: row.loop_status,
  iteration: row.iteration,
  loop_decision: row.loop_decision,
  result: row.result ?? null,
  evaluation_failures: row.evaluation_failures,
  resume_note: row.resume_note,
  resolvers: row.resolvers,
  input_tokens: row.input_tokens,
  output_tokens: row.output_tokens,
  delayMs: null,
});

/** Waits until the execution's lease has expired (by the database's clock). */
async function leaseExpired(executionId: string): Promise<void> {
  await until(
    async () =>
      (
        await db.query<{ expired: boolean }>(
          `select lease_expires_at < now() as expired from executions
            where tenant = 'default' and execution_id = $1`,
          [executionId],
        )
      ).rows[0]?.expired,
    (expired) => expired === true,
    'the lease to expire',
  );
}

const statusOf = async (executionId: string, tenant = 'default') =>
  (await getExecution(db, tenant, executionId))?.status;

describe('unblock against a step in flight', () => {
  it('holds when the step saves the claim-time `blocked` after the unblock', async () => {
    const executionId = await dispatch();
    await blockedAndDue(executionId);
    const step = await claim(executionId);
    expect(step.status).toBe('blocked');

    const answer = await unblockExecution(db, {
      tenant: 'default',
      executionId,
      commandId: `unblock_${executionId}`,
      note: 'the key is in place',
    });
    expect(answer).toEqual({ result: 'unblocked', status: 'waiting' });
    // The step ends with what it read at its claim: its save must not apply.
    await expect(saveExecution(db, leaseOf(step), stateOf(step))).rejects.toBeInstanceOf(
      ExecutionLeaseLostError,
    );
    const row = await getExecution(db, 'default', executionId);
    expect(row).toMatchObject({
      status: 'waiting',
      loop_status: 'idle',
      resume_note: 'the key is in place',
      lease_token: null,
    });
    // The next runner claims it at once (no lease left to expire) and sees the unblock.
    expect((await claim(executionId)).status).toBe('waiting');
  });

  it(`holds in ${engine === 'postgres' ? 20 : 8} real races of the step's save and the unblock`, async () => {
    for (let round = 0; round < (engine === 'postgres' ? 20 : 8); round++) {
      const executionId = await dispatch();
      await blockedAndDue(executionId);
      const step = await claim(executionId);
      const [saved, answer] = await Promise.allSettled([
        saveExecution(db, leaseOf(step), stateOf(step)),
        unblockExecution(db, {
          tenant: 'default',
          executionId,
          commandId: `unblock_${executionId}`,
          note: null,
        }),
      ]);
      // Whichever came first, an unblock the client was told about is what the row says.
      expect(answer).toMatchObject({ status: 'fulfilled', value: { result: 'unblocked' } });
      expect(await statusOf(executionId)).toBe('waiting');
      if (saved.status === 'rejected') expect(saved.reason).toBeInstanceOf(ExecutionLeaseLostError);
    }
  });

  it('is too late once a cancel was requested, and a retry answers duplicate', async () => {
    const executionId = await dispatch();
    await blockedAndDue(executionId);
    const step = await claim(executionId);
    // Leased: the cancel is left to the step (cancelling).
    expect(
      await cancelExecution(db, { tenant: 'default', executionId, commandId: `c_${executionId}` }),
    ).toEqual({ result: 'cancelled', status: 'cancelling' });
    const unblock = () =>
      unblockExecution(db, {
        tenant: 'default',
        executionId,
        commandId: `u_${executionId}`,
        note: null,
      });
    expect(await unblock()).toEqual({ result: 'too_late', status: 'cancelling' });
    expect(await unblock()).toEqual({ result: 'duplicate', status: 'cancelling' });
    expect((await getExecution(db, 'default', executionId))?.lease_token).toBe(step.lease_token);
  });
});

describe('cancel at once against a step whose lease expired', () => {
  it('is not undone by that step saving afterwards', async () => {
    const executionId = await dispatch();
    await blockedAndDue(executionId);
    const step = await claim(executionId, 1);
    await leaseExpired(executionId);
    expect(
      await cancelExecution(db, { tenant: 'default', executionId, commandId: `c_${executionId}` }),
    ).toEqual({ result: 'cancelled', status: 'cancelled' });
    await expect(saveExecution(db, leaseOf(step), stateOf(step))).rejects.toBeInstanceOf(
      ExecutionLeaseLostError,
    );
    const row = await getExecution(db, 'default', executionId);
    expect(row?.status).toBe('cancelled');
    expect(row?.ended_at).not.toBeNull();
  });
});

describe('wakeExecution', () => {
  it("advances only the execution of the waking session's tenant", async () => {
    // One execution id in two tenants, both waiting on a timer in the future.
    const executionId = `shared_${counter++}`;
    const sessions: Record<string, string> = {};
    for (const tenant of ['tenant_a', 'tenant_b']) {
      await createExecution(db, {
        tenant,
        executionId,
        user: 'alice',
        mission: 'watch',
        agent: 'default',
        visibility: 'tenant',
        input: {},
        spec: { prompt: 'Watch.', loop_prompt: null, loop_delay_seconds: 0 },
        threads: null,
        maxIterations: 1,
        interruptTo: null,
        priority: 1,
        timeoutSeconds: null,
      });
      await db.query(
        `update executions set status = 'running', next_run_at = now() + interval '1 hour'
          where tenant = $1 and execution_id = $2`,
        [tenant, executionId],
      );
      sessions[tenant] = (await getExecution(db, tenant, executionId))?.session_id as string;
    }
    // A session of a third tenant names that id: nothing is woken; B's session wakes B's only.
    const other = await db.transaction((tx) =>
      createSession(tx, {
        sessionId: newSessionId(),
        tenant: 'tenant_c',
        agent: 'default',
        title: null,
        greeting: null,
        owner: null,
        visibility: 'tenant',
      }),
    );
    const timers = async () =>
      (
        await db.query<{ tenant: string; due: boolean }>(
          `select tenant, next_run_at <= now() as due from executions
            where execution_id = $1 order by tenant`,
          [executionId],
        )
      ).rows;
    expect(await wakeExecution(db, { sessionId: other.session_id, executionId })).toBe(false);
    expect(await timers()).toEqual([
      { tenant: 'tenant_a', due: false },
      { tenant: 'tenant_b', due: false },
    ]);
    expect(await wakeExecution(db, { sessionId: sessions.tenant_b as string, executionId })).toBe(
      true,
    );
    expect(await timers()).toEqual([
      { tenant: 'tenant_a', due: false },
      { tenant: 'tenant_b', due: true },
    ]);
  });
});

describe('a step and a cancel that overlap', () => {
  it('a step whose lease a cancel took admits no further iteration', async () => {
    const executionId = await dispatch();
    await db.query(
      `update executions
          set status = 'waiting', loop_status = 'idle', iteration = 1,
              next_run_at = now() - interval '1 second'
        where tenant = 'default' and execution_id = $1`,
      [executionId],
    );
    const step = await claim(executionId, 1);
    await leaseExpired(executionId);
    // The step stalled before admitting iteration 2; nothing ran, so the cancel ends it.
    expect(
      await cancelExecution(db, { tenant: 'default', executionId, commandId: `c_${executionId}` }),
    ).toEqual({ result: 'cancelled', status: 'cancelled' });
    const deps = { db, agents: { get: () => undefined } };
    await expect(admitIteration(deps, step, 2, leaseOf(step))).rejects.toBeInstanceOf(
      ExecutionLeaseLostError,
    );
    const turns = await db.query('select 1 from turns where tenant = $1 and turn_id = $2', [
      'default',
      iterationTurnId(executionId, 2),
    ]);
    expect(turns.rows).toHaveLength(0);
    // While the lease holds, the same call admits.
    const other = await dispatch();
    const held = await claim(other);
    await expect(admitIteration(deps, held, 1, leaseOf(held))).resolves.toMatchObject({
      turn_id: iterationTurnId(other, 1),
      state: 'accepted',
    });
  });

  it('a step that admitted its iteration before its lease ran out leaves the cancel to the runner', async () => {
    const executionId = await dispatch();
    const step = await claim(executionId);
    const deps = { db, agents: { get: () => undefined } };
    await admitIteration(deps, step, 1, leaseOf(step));
    // The step stalls before it saves iteration 1, and its lease runs out.
    await db.query(
      `update executions set lease_expires_at = now() - interval '1 second'
        where tenant = 'default' and execution_id = $1`,
      [executionId],
    );
    // Ending the row here would leave that turn running for an ended execution.
    expect(
      await cancelExecution(db, { tenant: 'default', executionId, commandId: `c_${executionId}` }),
    ).toEqual({ result: 'cancelled', status: 'cancelling' });
    const row = await getExecution(db, 'default', executionId);
    expect(row).toMatchObject({ status: 'starting', iteration: 0, ended_at: null });
    expect(row?.cancel_command_id).toBe(`c_${executionId}`);
    // The next step's claim finds it due, and its stop cancels and counts that turn.
    const next = await claim(executionId);
    expect(next.cancel_command_id).toBe(`c_${executionId}`);
  });

  it('a cancel acknowledged while a step runs wins over the end the step saves', async () => {
    const executionId = await dispatch();
    await blockedAndDue(executionId);
    const step = await claim(executionId);
    expect(
      await cancelExecution(db, { tenant: 'default', executionId, commandId: `c_${executionId}` }),
    ).toEqual({ result: 'cancelled', status: 'cancelling' });
    // The step read the iteration's turn as done and concludes success.
    await saveExecution(db, leaseOf(step), {
      ...stateOf(step),
      status: 'success',
      loop_status: 'completed',
      result: { content: 'all done' },
    });
    const row = await getExecution(db, 'default', executionId);
    expect(row).toMatchObject({ status: 'cancelled', loop_status: 'idle' });
    expect(row?.ended_at).not.toBeNull();
  });
});
