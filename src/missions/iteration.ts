import { admitTurn, type Admission } from '../store/admitTurn.js';
import { holdExecutionLease, type ExecutionLease } from '../store/claimExecutions.js';
import type { AgentLookup } from '../agents/lookup.js';
import type { Queryable } from '../store/db.js';
import type { ExecutionRow } from '../store/getExecution.js';
import { trustedViewer } from '../store/visibility.js';
import type { ExecutionDeps } from './deps.js';

/**
 * The turn ids an execution admits. The dot is not a client key character
 * (`[A-Za-z0-9_-]`), so they can never collide with a client's `turn_id`; and being
 * deterministic, a retry after a crash admits the same turn once (admission is idempotent).
 */
export function iterationTurnId(executionId: string, iteration: number): string {
  return `exec.${executionId}.${iteration}`;
}

export function resolverTurnId(executionId: string, requestId: string): string {
  return `exec.${executionId}.${requestId}`;
}

/** The execution a turn belongs to (for wake-ups), or null for any other turn. */
export function executionOfTurn(turnId: string | undefined): string | null {
  if (!turnId?.startsWith('exec.')) return null;
  const last = turnId.lastIndexOf('.');
  return last > 'exec.'.length ? turnId.slice('exec.'.length, last) : null;
}

/** What an iteration says: the mission prompt first, then a request to go on. */
export function iterationMessage(execution: ExecutionRow, iteration: number): string {
  if (iteration === 1) return execution.spec.prompt;
  const lines = [
    `Continue the mission. This is iteration ${iteration} of ${execution.max_iterations}.`,
  ];
  if (execution.loop_decision?.reason) {
    lines.push(`The last evaluation said: ${execution.loop_decision.reason}`);
  }
  if (execution.resume_note)
    lines.push(`A person unblocked the mission and said: ${execution.resume_note}`);
  return lines.join('\n');
}

/**
 * Admits an iteration into the execution's session through the public path, as a
 * well-behaved client would: the ordinary drain loop answers it on the ordinary workers,
 * with the ordinary approvals and cancel. The execution's agent always triggers (its
 * trigger_roles are for people posting in rooms). Only while `lease` holds the execution:
 * a step that stalled past its lease (and was cancelled meanwhile) admits nothing.
 */
export async function admitIteration(
  deps: AdmittingDeps,
  execution: ExecutionRow,
  iteration: number,
  lease: ExecutionLease,
): Promise<Admission> {
  return admitAs(
    deps,
    execution,
    {
      sessionId: execution.session_id,
      agent: execution.agent,
      turnId: iterationTurnId(execution.execution_id, iteration),
      message: iterationMessage(execution, iteration),
    },
    (tx) => holdExecutionLease(tx, lease),
  );
}

/** What an admission for an execution reads: the database, and its agents' settings. */
export type AdmittingDeps = Pick<ExecutionDeps, 'db'> & { agents: Pick<AgentLookup, 'get'> };

/** Admits a turn for an execution (its iteration, or a request to an answering agent). */
export async function admitAs(
  deps: AdmittingDeps,
  execution: ExecutionRow,
  turn: { sessionId: string | null; agent: string; turnId: string; message: string },
  guard?: (tx: Queryable) => Promise<void>,
): Promise<Admission> {
  const agent = deps.agents.get(execution.tenant, turn.agent);
  return admitTurn(deps.db, {
    tenant: execution.tenant,
    author: execution.user_name,
    viewer: trustedViewer,
    turnId: turn.turnId,
    sessionId: turn.sessionId,
    agent: turn.sessionId === null ? turn.agent : null,
    defaultAgent: turn.agent,
    greetings: new Map([[turn.agent, agent?.greeting ?? null]]),
    visibilities: new Map([[turn.agent, agent?.visibility ?? 'tenant']]),
    message: turn.message,
    option: null,
    attachments: [],
    triggers: new Map([[turn.agent, true]]),
    pendingInput: new Map([[turn.agent, agent?.pendingInput ?? 'supersede']]),
    ...(guard ? { guard } : {}),
  });
}
