import { TaskState, type Task } from '@a2a-js/sdk';
import type { z } from 'zod';
import type { Principal } from '../../config/types.js';
import { listAgentTurns, type AgentTurnRow, type TurnState } from '../../store/listAgentTurns.js';
import { encodeCursor } from '../../store/listSessions.js';
import type { ApiDeps } from '../deps.js';
import { viewerOf } from '../sessionAccess.js';
import { timeCursor } from '../validate.js';
import type { listParams } from './params.js';
import type { TaskFold, TaskIdentity } from './taskFold.js';

/** Folds one task as it stands now (routes.ts `foldTask`). */
type FoldNow = (identity: TaskIdentity, from: number) => Promise<TaskFold>;

/** Ended states are the turn's own; the others are told apart only by folding the task. */
const endedStates: Partial<Record<TaskState, TurnState>> = {
  [TaskState.TASK_STATE_COMPLETED]: 'done',
  [TaskState.TASK_STATE_FAILED]: 'error',
  [TaskState.TASK_STATE_CANCELED]: 'cancelled',
};

/** How many unended tasks a listing by an unended state folds at most. */
const unendedCap = 1000;

interface Cursor {
  createdAt: string;
  turnId: string;
}

/**
 * A2A `ListTasks`: the agent's tasks (turns of its sessions) that the principal may see,
 * newest first, `pageSize` a page (default 50, at most 100), of one `contextId` and one
 * `status` when asked. An ended status (completed, failed, canceled) is the turn's state in
 * the database, paged there; an unended one (submitted, working, input-required) is known
 * by folding the journal, so those tasks — at most 1,000 unended, newest first — are
 * folded and filtered, and paged from that. `statusTimestampAfter` keeps tasks that ended
 * at or after it and every unended one. Artifacts only with `includeArtifacts`.
 */
export async function listTasks(
  deps: ApiDeps,
  principal: Principal,
  agent: string,
  params: z.output<typeof listParams>,
  foldNow: FoldNow,
): Promise<{ tasks: Task[]; nextPageToken: string; pageSize: number; totalSize: number }> {
  const pageSize = params.pageSize ?? 50;
  const cursor = params.pageToken ? cursorOf(params.pageToken) : null;
  const wanted = params.status === undefined ? null : TaskState[params.status];
  const filter = {
    tenant: principal.tenant,
    agent,
    viewer: viewerOf(deps, principal),
    sessionId: params.contextId ?? null,
    endedSince: params.statusTimestampAfter ?? null,
  };
  const shape = (fold: TaskFold): Task => {
    const task = fold.snapshot();
    const history =
      params.historyLength === undefined
        ? task.history
        : params.historyLength === 0
          ? []
          : task.history.slice(-params.historyLength);
    return { ...task, history, artifacts: params.includeArtifacts ? task.artifacts : [] };
  };
  const fold = (row: AgentTurnRow) =>
    foldNow({ taskId: row.turn_id, contextId: row.session_id }, row.admitted_sequence - 1);

  if (wanted === null || endedStates[wanted] !== undefined) {
    const ended = wanted === null ? null : endedStates[wanted];
    const page = await listAgentTurns(
      deps.db,
      { ...filter, states: ended ? [ended] : null },
      { limit: pageSize, cursor },
    );
    const tasks: Task[] = [];
    for (const row of page.rows) tasks.push(shape(await fold(row)));
    return {
      tasks,
      nextPageToken: page.more ? tokenOf(page.rows.at(-1)) : '',
      pageSize,
      totalSize: page.total,
    };
  }
  const unended = await listAgentTurns(
    deps.db,
    { ...filter, states: ['queued', 'running'] },
    { limit: unendedCap, cursor: null },
  );
  const matching: { row: AgentTurnRow; fold: TaskFold }[] = [];
  for (const row of unended.rows) {
    const folded = await fold(row);
    if (folded.state === wanted) matching.push({ row, fold: folded });
  }
  const start = cursor ? matching.findIndex(({ row }) => before(row, cursor)) : 0;
  const from = start === -1 ? matching.length : start;
  const page = matching.slice(from, from + pageSize);
  return {
    tasks: page.map(({ fold: folded }) => shape(folded)),
    nextPageToken: from + pageSize < matching.length ? tokenOf(page.at(-1)?.row) : '',
    pageSize,
    totalSize: matching.length,
  };
}

/** Whether `row` comes after the cursor in the listing's order (newest first). */
function before(row: AgentTurnRow, cursor: Cursor): boolean {
  const at = row.created_at.toISOString();
  return at < cursor.createdAt || (at === cursor.createdAt && row.turn_id < cursor.turnId);
}

function tokenOf(row: AgentTurnRow | undefined): string {
  return row ? encodeCursor([row.created_at.toISOString(), row.turn_id]) : '';
}

function cursorOf(token: string): Cursor {
  const { at, id } = timeCursor(token, 'params.pageToken');
  return { createdAt: at, turnId: id };
}
