import { createHash, randomUUID } from 'node:crypto';
import {
  ErrorCode,
  McpError,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../config/types.js';
import { isParleyError } from '../../errors.js';
import { findTaskTurn, type TaskTurnRow } from '../../store/findTaskTurn.js';
import { listTaskTurns } from '../../store/listTaskTurns.js';
import { encodeCursor } from '../../store/listSessions.js';
import { readTurnOutcome, type TurnOutcome } from '../../store/readTurnOutcome.js';
import { cancelAsPrincipal, cancelWaitMs } from '../adapterStreams.js';
import type { ApiDeps } from '../deps.js';
import type { JournalFeed } from '../feed.js';
import { JournalFollower } from '../journalFollower.js';
import { viewerOf } from '../sessionAccess.js';
import { timeCursor } from '../validate.js';
import { admitCall, type CallOutcome, type TurnCall } from './callTurn.js';
import { followTurn, type Elicit } from './followTurn.js';
import { linkedSignal } from '../../linkedSignal.js';
import { resultOf, waitingText } from './toolResult.js';

/**
 * MCP tasks (docs/protocols.md, "MCP server"): a `tools/call` with a `task` param is a
 * Parley turn whose id is the task id, answered at once; `tasks/get`, `tasks/result`,
 * `tasks/list` and `tasks/cancel` read that turn from the journal, so any process answers
 * them, in any MCP session of the principal. Nothing about a task lives in a process.
 */

/** The turn ids of tasks start with it: `tasks/list` lists the principal's turns so named. */
const taskPrefix = 'mcpt_';
const taskIdPattern = /^mcpt_[A-Za-z0-9_-]{32}$/;

/** How often a client is asked to poll `tasks/get` (ms). */
export const taskPollMs = 1000;

/** Tasks a `tasks/list` page holds. */
const pageSize = 50;

/** What the task methods of one MCP session read (server.ts). */
export interface TaskIo {
  deps: ApiDeps;
  feed: JournalFeed;
  principal: Principal;
}

/**
 * The turn id of a task-augmented call: derived from the principal, the agent and the
 * client's idempotency key when it sends one (a retry is the same task), else new.
 */
export function taskTurnId(principal: Principal, agent: string, key: string | null): string {
  if (key === null) return `${taskPrefix}${randomUUID().replaceAll('-', '')}`;
  const digest = createHash('sha256')
    .update(`${principal.user}\n${agent}\n${key}`)
    .digest('base64url');
  return `${taskPrefix}${digest.slice(0, 32)}`;
}

/** A task-augmented `tools/call`: admits the turn and answers the task as it stands. */
export async function createTask(io: TaskIo, call: TurnCall): Promise<{ task: Task }> {
  await mcpErrors(() => admitCall(io.deps, io.principal, call));
  return { task: await getTask(io, call.turnId) };
}

/** `tasks/get`: the task as the journal tells it now. */
export function getTask(io: TaskIo, taskId: string): Promise<Task> {
  return currentTask(io, taskId, 'Failed to retrieve task: Task not found');
}

/**
 * `tasks/result`: once the turn ended, the tool result the call without a task answers;
 * until then it waits, also while the turn waits for a person. With `elicit` (the client
 * declared elicitation), the approvals and questions the turn waits on are asked on this
 * request's stream and answered as the principal (followTurn.ts); else, or once dismissed,
 * they wait in Parley's inbox. The client's cancel of this request (or its leaving) only
 * ends the wait, never the turn.
 */
export async function taskResult(
  io: TaskIo,
  taskId: string,
  signal: AbortSignal,
  elicit: Elicit | null,
): Promise<CallToolResult> {
  const missing = notFound(taskId);
  const row = await findTask(io, taskId, missing);
  if (elicit) {
    const turn = {
      sessionId: row.session_id,
      turnId: row.turn_id,
      sequence: row.admitted_sequence,
    };
    await followTurn({ ...io, signal, progress: null, elicit }, turn, 'wait');
  }
  const outcome = await settle(io, row, signal);
  if (outcome.kind === 'missing') throw new McpError(ErrorCode.InvalidParams, missing);
  if (!isEnded(outcome)) {
    throw new McpError(ErrorCode.ConnectionClosed, 'the wait for the task was given up');
  }
  return {
    ...resultOf(callOutcomeOf(row, outcome)),
    _meta: { [RELATED_TASK_META_KEY]: { taskId } },
  };
}

/** `tasks/list`: the principal's tasks, newest first, 50 a page. */
export async function listTasks(
  io: TaskIo,
  cursor: string | undefined,
): Promise<{ tasks: Task[]; nextCursor?: string }> {
  const after = cursor === undefined ? null : await mcpErrors(async () => timeCursor(cursor));
  const page = await listTaskTurns(
    io.deps.db,
    { tenant: io.principal.tenant, prefix: taskPrefix, viewer: viewerOf(io.deps, io.principal) },
    { limit: pageSize, cursor: after && { createdAt: after.at, turnId: after.id } },
  );
  const tasks: Task[] = [];
  for (const row of page.rows) {
    const outcome = await readTurnOutcome(io.deps.db, row.session_id, row.turn_id);
    if (outcome.kind !== 'missing') tasks.push(taskOf(io, row, outcome));
  }
  const last = page.rows.at(-1);
  return {
    tasks,
    ...(page.more && last
      ? { nextCursor: encodeCursor([last.created_at.toISOString(), last.turn_id]) }
      : {}),
  };
}

/**
 * `tasks/cancel`: Parley's durable cancel of the turn (the same command as every other
 * adapter's cancel of it); answers the task once it ended, or as it stands after a few
 * seconds (a running tool finishes first). An ended task cannot be cancelled.
 */
export async function cancelTask(io: TaskIo, taskId: string, signal: AbortSignal): Promise<Task> {
  const missing = notFound(taskId);
  const row = await findTask(io, taskId, missing);
  const before = await outcomeOf(io, row, missing);
  const ended = (outcome: TurnOutcome) =>
    new McpError(
      ErrorCode.InvalidParams,
      `Cannot cancel task in terminal status: ${statusOf(outcome).status}`,
    );
  if (isEnded(before)) throw ended(before);
  const answer = await mcpErrors(() =>
    cancelAsPrincipal(io.deps.db, io.principal, { sessionId: row.session_id, turnId: taskId }),
  );
  if (answer.result === 'too_late') throw ended(await outcomeOf(io, row, missing));
  const bound = AbortSignal.timeout(cancelWaitMs(io.deps.config.server.blockingWaitMs));
  const stopped = linkedSignal(signal, bound);
  try {
    await settle(io, row, stopped.signal);
  } finally {
    stopped.dispose();
  }
  return currentTask(io, taskId, missing);
}

/** The SDK's words for a task it does not have (the id as given, cut to 128 characters). */
const notFound = (taskId: string) => `Task not found: ${taskId.slice(0, 128)}`;

async function currentTask(io: TaskIo, taskId: string, missing: string): Promise<Task> {
  const row = await findTask(io, taskId, missing);
  return taskOf(io, row, await outcomeOf(io, row, missing));
}

/** The principal's task by id; anyone else's, or a malformed id, is as missing as none. */
async function findTask(io: TaskIo, taskId: string, missing: string): Promise<TaskTurnRow> {
  const row = taskIdPattern.test(taskId)
    ? await findTaskTurn(io.deps.db, io.principal.tenant, taskId, viewerOf(io.deps, io.principal))
    : null;
  if (!row) throw new McpError(ErrorCode.InvalidParams, missing);
  return row;
}

async function outcomeOf(io: TaskIo, row: TaskTurnRow, missing: string): Promise<TurnOutcome> {
  const outcome = await readTurnOutcome(io.deps.db, row.session_id, row.turn_id);
  if (outcome.kind === 'missing') throw new McpError(ErrorCode.InvalidParams, missing);
  return outcome;
}

/**
 * Follows the session's journal until the turn ended, or `signal` aborts: answers the
 * turn's outcome then. The follower is open before the first read, so an end journaled
 * after that read still wakes it.
 */
async function settle(io: TaskIo, row: TaskTurnRow, signal: AbortSignal): Promise<TurnOutcome> {
  const follower = new JournalFollower(io.deps.db, io.feed, row.session_id, row.admitted_sequence);
  try {
    for (;;) {
      const outcome = await readTurnOutcome(io.deps.db, row.session_id, row.turn_id);
      if (isEnded(outcome) || outcome.kind === 'missing' || signal.aborted) return outcome;
      if (!(await follower.take(signal, () => undefined)) && !signal.aborted) {
        // The session is gone: its turns with it.
        return readTurnOutcome(io.deps.db, row.session_id, row.turn_id);
      }
    }
  } finally {
    follower.close();
  }
}

const isEnded = (outcome: TurnOutcome) =>
  outcome.kind === 'done' || outcome.kind === 'error' || outcome.kind === 'cancelled';

/** The MCP task of a turn: its status is the journal's; ttl the retention of its session. */
function taskOf(io: TaskIo, row: TaskTurnRow, outcome: TurnOutcome): Task {
  const keepDays = io.deps.config.retention.keepSessionsDays;
  return {
    taskId: row.turn_id,
    ...statusOf(outcome),
    ttl: keepDays === null ? null : keepDays * 86_400_000,
    createdAt: row.created_at.toISOString(),
    lastUpdatedAt: row.updated_at.toISOString(),
    pollInterval: taskPollMs,
  };
}

function statusOf(outcome: TurnOutcome): Pick<Task, 'status' | 'statusMessage'> {
  switch (outcome.kind) {
    case 'done':
      return { status: 'completed' };
    case 'error':
      return { status: 'failed', statusMessage: `${outcome.code}: ${outcome.message}` };
    case 'cancelled':
      return { status: 'cancelled' };
    case 'waiting':
      return {
        status: 'input_required',
        statusMessage: waitingText(outcome.requests[0]?.request_id),
      };
    default:
      return { status: 'working' };
  }
}

/** The outcome as a call without a task reports it (`structuredContent`). */
function callOutcomeOf(row: TaskTurnRow, outcome: TurnOutcome): CallOutcome {
  const base = { session_id: row.session_id, turn_id: row.turn_id };
  switch (outcome.kind) {
    case 'done':
      return { ...base, status: 'completed', reply: outcome.content };
    case 'error':
      return {
        ...base,
        status: 'failed',
        reply: '',
        error: { code: outcome.code, message: outcome.message },
      };
    case 'cancelled':
      return { ...base, status: 'cancelled', reply: '' };
    case 'waiting':
      return {
        ...base,
        status: 'input_required',
        reply: '',
        ...(outcome.requests[0] ? { request_id: outcome.requests[0].request_id } : {}),
      };
    default:
      return { ...base, status: 'in_progress', reply: '' };
  }
}

/** Parley's refusals as the JSON-RPC error a task method answers (its code in `data`). */
async function mcpErrors<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!isParleyError(error)) throw error;
    throw new McpError(
      error.status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidParams,
      `${error.code}: ${error.message}`,
      { error: error.code },
    );
  }
}
