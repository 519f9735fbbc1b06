import type { DrainAccess } from './drain.js';
import { sendOnce, sleep, type Apis } from './http.js';
import type { ExecutionKind, MissionLedger } from './missionLedger.js';
import { spreadOver } from './pacer.js';
import type { Random } from './random.js';

/**
 * The soak's missions (docs/missions.md), on the demo model: `/decide` in a loop prompt
 * is the evaluator's answer. Each exercises one path of the runner under the chaos:
 * - `soak_once`: one iteration, success (also the fan-out's threads);
 * - `soak_loop`: three iterations with a durable one-second delay between them;
 * - `soak_limit`: continues past its `max_iterations`, ends `limit_reached`;
 * - `soak_blocked`: blocks after its first iteration until a client unblocks it with a note
 *   saying `/decide complete`, which the next evaluation reads.
 */
export const soakMissions = {
  soak_once: { prompt: 'soak mission once' },
  soak_loop: {
    prompt: 'soak mission loop',
    loop_prompt: '/decide continue:3',
    max_iterations: 5,
    loop_delay_seconds: 1,
  },
  soak_limit: {
    prompt: 'soak mission limit',
    loop_prompt: '/decide continue:99',
    max_iterations: 2,
    loop_delay_seconds: 1,
  },
  soak_blocked: {
    prompt: 'soak mission blocked',
    loop_prompt: '/decide blocked',
    max_iterations: 3,
  },
  // What the schedules start (schedules.ts): two iterations a second apart, so that an
  // execution is often still running at its schedule's next fire.
  soak_tick: {
    prompt: 'soak scheduled tick',
    loop_prompt: '/decide continue:2',
    max_iterations: 3,
    loop_delay_seconds: 1,
  },
} as const;

const missionOf: Record<ExecutionKind, keyof typeof soakMissions> = {
  once: 'soak_once',
  loop: 'soak_loop',
  limit: 'soak_limit',
  blocked: 'soak_blocked',
  fanout: 'soak_once',
  cancel: 'soak_loop',
};

const kindWeights: Record<ExecutionKind, number> = {
  once: 2,
  loop: 3,
  limit: 1,
  blocked: 2,
  fanout: 1,
  cancel: 2,
};

export const endedStatuses = new Set(['success', 'error', 'timeout', 'cancelled', 'limit_reached']);

/** How long a mission client keeps retrying one request, as a chat client does. */
const retryWindowMs = 60_000;

export interface MissionClientContext {
  apis: Apis;
  ledger: MissionLedger;
  random: Random;
  /** Executions to dispatch, spread evenly over `windowMs`. */
  count: number;
  windowMs: number;
  /** How long a client waits for a `blocked` execution before leaving it to the drain. */
  followTimeoutMs: number;
}

/**
 * A client of the missions API under the chaos: dispatches executions (retried unchanged
 * with the same execution_id, sometimes sent twice on purpose), cancels some at a random
 * moment, and unblocks the blocked loops — each command retried with its command_id.
 */
export async function runMissionClient(context: MissionClientContext): Promise<void> {
  await spreadOver(context.count, context.windowMs, context.random, (index) => {
    const random = context.random.fork(`execution-${index}`);
    return driveExecution(context, random, `soakx${index}`, random.weighted(kindWeights));
  });
}

async function driveExecution(
  context: MissionClientContext,
  random: Random,
  executionId: string,
  kind: ExecutionKind,
): Promise<void> {
  const { ledger, apis } = context;
  const mission = missionOf[kind];
  const threads = kind === 'fanout' ? 2 : 0;
  const body: Record<string, unknown> = { execution_id: executionId, input: { soak: executionId } };
  if (threads > 0)
    body.threads = Array.from({ length: threads }, (_, index) => ({ input: { thread: index } }));
  const path = `/api/v1/missions/${mission}/executions`;
  ledger.counters.dispatchAttempts += 1;
  const answer = await apis.send('POST', path, body, {
    deadline: Date.now() + retryWindowMs,
    random,
    onRetry: () => (ledger.counters.dispatchRetries += 1),
  });
  if (!answer) {
    ledger.counters.unacknowledged += 1;
    return;
  }
  if (answer.status !== 202 || answer.body?.execution_id !== executionId) {
    ledger.violation('dispatch', `${executionId}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return;
  }
  ledger.acknowledge({ executionId, mission, kind, threads });
  if (random.chance(0.08)) {
    // A double-clicking user: the same dispatch again, to the other API process.
    ledger.counters.doubleDispatches += 1;
    const again = await sendOnce(apis.pick(), 'POST', path, body).catch(() => null);
    if (again?.status === 202 && again.body?.session_id === answer.body.session_id) {
      ledger.acknowledge({ executionId, mission, kind, threads });
    } else if (again && again.status < 500) {
      ledger.violation(
        'dispatch idempotency',
        `${executionId}: first session ${answer.body.session_id}, again ${again.status} ${JSON.stringify(again.body)}`,
      );
    }
  }
  if (kind === 'cancel') {
    await sleep(random.int(0, 4_000));
    await sendCommand(context, random, executionId, 'cancel', `xc_${executionId}`, null);
  }
  if (kind === 'blocked') await unblockWhenBlocked(context, random, executionId);
}

/** Polls the execution until it ends, unblocking it whenever it is blocked. */
async function unblockWhenBlocked(
  context: MissionClientContext,
  random: Random,
  executionId: string,
): Promise<void> {
  const deadline = Date.now() + context.followTimeoutMs;
  let unblocks = 0;
  while (Date.now() < deadline) {
    const seen = await context.apis.send('GET', `/api/v1/executions/${executionId}`, undefined, {
      deadline,
      random,
    });
    const status = seen?.status === 200 ? String(seen.body?.status) : null;
    if (status !== null && endedStatuses.has(status)) return;
    if (status === 'blocked') {
      unblocks += 1;
      await sendCommand(
        context,
        random,
        executionId,
        'unblock',
        `xu_${executionId}_${unblocks}`,
        `soak unblock xu_${executionId}_${unblocks} /decide complete`,
      );
    }
    await sleep(random.int(300, 700));
  }
}

/**
 * One cancel or unblock, retried with its command_id until answered; sometimes sent again
 * on purpose, when it must answer `duplicate` with the first status.
 */
export async function sendCommand(
  context: { apis: Apis; ledger: MissionLedger },
  random: Random,
  executionId: string,
  kind: 'cancel' | 'unblock',
  commandId: string,
  note: string | null,
): Promise<void> {
  const { apis, ledger } = context;
  const path = `/api/v1/executions/${executionId}/${kind}`;
  const body = note === null ? { command_id: commandId } : { command_id: commandId, note };
  if (kind === 'cancel') ledger.counters.cancelsSent += 1;
  else ledger.counters.unblocksSent += 1;
  const answer = await apis.send('POST', path, body, {
    deadline: Date.now() + retryWindowMs,
    random,
  });
  if (!answer) return;
  if (answer.status === 409 && answer.body?.error === 'execution_not_blocked') {
    ledger.counters.notBlocked += 1;
    return;
  }
  if (answer.status !== 200) {
    ledger.violation(kind, `${executionId}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return;
  }
  const first = answer.body as {
    result: 'cancelled' | 'unblocked' | 'duplicate' | 'too_late';
    status: string;
  };
  ledger.commands.push({
    executionId,
    commandId,
    kind,
    result: first.result,
    status: first.status,
    note,
  });
  if (random.chance(0.3)) {
    const again = await apis.send('POST', path, body, {
      deadline: Date.now() + retryWindowMs,
      random,
    });
    if (
      again &&
      (again.status !== 200 ||
        again.body?.result !== 'duplicate' ||
        again.body?.status !== first.status)
    ) {
      ledger.violation(
        `${kind} idempotency`,
        `${executionId}: first ${first.result}/${first.status}, again ${again.status} ${JSON.stringify(again.body)}`,
      );
    }
  }
}

export interface ExecutionDrainResult {
  /** Executions the drain waited for that had still not ended. */
  open: number;
  unblocked: number;
  durationMs: number;
  stuck: string[];
}

/**
 * After the chaos: stops the schedules (there is no API to pause one: their timers are
 * cleared in the database, as removing them from the configuration would on the next
 * start), then waits until every execution has ended, unblocking any a client left
 * blocked, as the person it waits for would. Nothing else helps the system along.
 */
export async function drainExecutions(
  access: DrainAccess,
  context: { apis: Apis; ledger: MissionLedger },
  random: Random,
  timeoutMs: number,
): Promise<ExecutionDrainResult> {
  const began = Date.now();
  // Rows the scheduler holds while it fires are skipped, not waited for (under load a
  // waiting write times out): the write is repeated until no schedule has a timer left.
  while (Date.now() - began < timeoutMs) {
    const left = await access.read((db) =>
      db
        .query<{ left: number }>(
          `with cleared as (
             update schedules set next_fire_at = null
              where name in (select name from schedules where next_fire_at is not null
                              for update skip locked)
             returning name)
           select ((select count(*) from schedules where next_fire_at is not null)
                   - (select count(*) from cleared))::int as left`,
        )
        .then(
          (found) => found.rows[0]?.left ?? -1,
          () => -1,
        ),
    );
    if (left === 0) break;
    await access.pause();
  }
  let unblocked = 0;
  let open: { execution_id: string; status: string; session: string }[] = [];
  // At least one look, however long the schedules took to stop.
  for (let looks = 0; looks === 0 || Date.now() - began < timeoutMs; looks++) {
    const seen = await access.read(async (db) => {
      const open = (
        await db
          .query<{ execution_id: string; status: string; session: string }>(
            `select x.execution_id, x.status,
                    s.state || (case when s.lease_token is null then '' else ', leased' end) ||
                    '; open turns ' || coalesce((select string_agg(t.turn_id || ' ' || t.state, ', ')
                        from turns t where t.session_id = s.session_id
                         and t.state in ('queued', 'running')), 'none') as session
               from executions x join sessions s on s.session_id = x.session_id
              where x.ended_at is null order by x.execution_id`,
          )
          .catch(() => ({ rows: [{ execution_id: '?', status: 'unreadable', session: '?' }] }))
      ).rows;
      if (open.length === 0) return { open, parked: [] };
      // A parked session holding an iteration is unparked, as an operator would.
      const parked = await db
        .query<{ session_id: string }>(
          `select s.session_id from sessions s join executions x on x.session_id = s.session_id
            where x.ended_at is null and s.state = 'parked' and s.input_count > s.input_cursor`,
        )
        .catch(() => ({ rows: [] }));
      return { open, parked: parked.rows };
    });
    open = seen.open;
    if (open.length === 0) break;
    await access.serve();
    for (const session of seen.parked) {
      await context.apis.send(
        'POST',
        `/api/v1/admin/sessions/${session.session_id}/unpark`,
        {},
        {
          deadline: Date.now() + 10_000,
          random,
        },
      );
    }
    for (const execution of open) {
      if (execution.status !== 'blocked') continue;
      // The unblock moves it out of `blocked` in its own transaction: a later sighting is
      // a new block (the next evaluation), answered by a new command.
      unblocked += 1;
      const commandId = `xd_${execution.execution_id}_${unblocked}`;
      await sendCommand(
        context,
        random,
        execution.execution_id,
        'unblock',
        commandId,
        `soak unblock ${commandId} /decide complete`,
      );
    }
    await access.pause();
  }
  return {
    open: open.length,
    unblocked,
    durationMs: Date.now() - began,
    stuck: open.map(
      (execution) =>
        `execution ${execution.execution_id} ${execution.status}; its session ${execution.session}`,
    ),
  };
}
