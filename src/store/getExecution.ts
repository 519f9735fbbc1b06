import {
  newEvent,
  type ExecutionStatus,
  type LoopDecision,
  type LoopStatus,
  type NewEvent,
} from '../protocol/events.js';
import type { Execution } from '../protocol/missions.js';
import type { Queryable } from './db.js';

/**
 * Glossary:
 * - mission: a reusable objective (prompt, optional loop prompt, limits, routing).
 * - execution: one run of a mission for a user, with its own session. Each iteration is a
 *   turn admitted into that session (`exec.ID.N`), answered by the ordinary drain loop.
 * - thread: a fan-out execution's child, an execution of its own (`ID.N`).
 * - execution lease: the right to advance one execution (token + expiry on its row), like
 *   a session's; the row's `next_run_at` is its durable timer.
 */
export interface ExecutionSpec {
  /** The first iteration's message (the mission prompt with the input filled in). */
  prompt: string;
  loop_prompt: string | null;
  loop_delay_seconds: number;
  /** A fan-out execution's threads (its children do the work); null otherwise. */
  threads: { agent: string; input: Record<string, unknown> }[] | null;
  /** The mission's `approval_timeout_ms` (absent in rows dispatched before it existed). */
  approval_timeout_ms?: number | null;
  /** The mission's `on_timeout`. */
  on_timeout?: 'reject' | 'approve' | null;
}

export interface ExecutionRow {
  tenant: string;
  execution_id: string;
  mission: string;
  /** The revision of the mission's definition its spec was taken from (null: none stored). */
  mission_revision: number | null;
  agent: string;
  user_name: string;
  session_id: string;
  /** The workspace it was dispatched in (null: none). */
  workspace_id: string | null;
  parent_execution_id: string | null;
  schedule: string | null;
  fire_time: Date | null;
  after_execution_id: string | null;
  fingerprint: string;
  input: Record<string, unknown>;
  spec: ExecutionSpec;
  interrupt_to: string | null;
  priority: number;
  status: ExecutionStatus;
  loop_status: LoopStatus | null;
  iteration: number;
  max_iterations: number;
  next_run_at: Date | null;
  timeout_at: Date | null;
  loop_decision: LoopDecision | null;
  result: unknown;
  evaluation_failures: number;
  resume_note: string | null;
  cancel_command_id: string | null;
  resolvers: Record<string, string>;
  input_tokens: number;
  output_tokens: number;
  lease_token: string | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  claim_count: number;
  created_at: Date;
  updated_at: Date;
  ended_at: Date | null;
}

/** Statuses after which nothing more happens. */
export const endedStatuses: readonly ExecutionStatus[] = [
  'success',
  'cancelled',
  'timeout',
  'error',
  'limit_reached',
];

export function isEnded(status: ExecutionStatus): boolean {
  return endedStatuses.includes(status);
}

/** The row as the API shows it (`Execution`, src/protocol/missions.ts). */
export function toExecutionProjection(row: ExecutionRow): Execution {
  return {
    execution_id: row.execution_id,
    mission: row.mission,
    agent: row.agent,
    user: row.user_name,
    session_id: row.session_id,
    workspace_id: row.workspace_id,
    status: row.status,
    loop_status: row.loop_status,
    iteration: row.iteration,
    max_iterations: row.max_iterations,
    // A timer that is only the timeout, or the recheck of a running turn, is not a
    // "next run": only a waiting loop's delay is.
    next_run_at: row.status === 'waiting' ? (row.next_run_at?.toISOString() ?? null) : null,
    loop_decision: row.loop_decision,
    result: row.result ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The `execution_status` event that announces a row's state in its session's journal. */
export function executionStatusEvent(row: ExecutionRow): NewEvent<'execution_status'> {
  const projection = toExecutionProjection(row);
  return newEvent('execution_status', null, {
    execution_id: row.execution_id,
    mission: row.mission,
    status: row.status,
    loop_status: row.loop_status,
    iteration: row.iteration,
    max_iterations: row.max_iterations,
    next_run_at: projection.next_run_at,
    loop_decision: row.loop_decision,
    ...(isEnded(row.status) ? { result: row.result ?? null } : {}),
    usage: { input_tokens: row.input_tokens, output_tokens: row.output_tokens },
  });
}

export async function getExecution(
  db: Queryable,
  tenant: string,
  executionId: string,
): Promise<ExecutionRow | null> {
  const found = await db.query<ExecutionRow>(
    'select * from executions where tenant = $1 and execution_id = $2',
    [tenant, executionId],
  );
  return found.rows[0] ?? null;
}
