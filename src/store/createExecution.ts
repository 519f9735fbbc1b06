import { createHash } from 'node:crypto';
import type { Visibility } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { newSessionId } from '../ids.js';
import { isUniqueViolation, type Db, type Queryable } from './db.js';
import { journalEvents } from './appendEvents.js';
import { createSession } from './createSession.js';
import { jsonbOrder } from './eventRows.js';
import { executionStatusEvent, type ExecutionRow, type ExecutionSpec } from './getExecution.js';
import { notifyWakeup } from './wakeups.js';
import { holdWorkspace } from './workspaces.js';

export interface DispatchThread {
  agent: string;
  /** Its agent's visibility: its session's. */
  visibility: Visibility;
  input: Record<string, unknown>;
  /** Its first iteration's message. */
  prompt: string;
}

export interface DispatchInput {
  tenant: string;
  executionId: string;
  user: string;
  mission: string;
  /** The revision of the mission's definition the spec was taken from (null: none stored). */
  missionRevision?: number | null;
  agent: string;
  /** The agent's visibility: the execution's session's (owned by `user`). */
  visibility: Visibility;
  input: Record<string, unknown>;
  spec: Omit<ExecutionSpec, 'threads'>;
  threads: DispatchThread[] | null;
  maxIterations: number;
  interruptTo: string | null;
  priority: number;
  timeoutSeconds: number | null;
  /** A scheduled fire: which schedule, for which fire time. */
  schedule?: { name: string; fireTime: Date } | null;
  /** overlap: queue — start once that execution has ended. */
  afterExecutionId?: string | null;
  /**
   * The workspace it is dispatched in (its sessions too): the caller checked the user is
   * a member; it is held here, in the dispatch's transaction (holdWorkspace).
   */
  workspaceId?: string | null;
}

/**
 * Dispatches an execution (POST /api/v1/missions/{name}/executions, or a schedule's fire):
 * its session (and one per fan-out thread) and its row, due at once, in one transaction,
 * announced with `execution_status` in its session and a wake-up for the runners.
 * Idempotent by (tenant, execution_id) like a turn_id: a retry with the same dispatch gets
 * the stored execution back (`created: false`); other input is `execution_conflict`. The
 * dispatch is compared by the hash of its canonical JSON (object keys in jsonb's order at
 * every depth, as `definitions.content_hash`), so key order never makes a retry differ.
 */
export async function createExecution(
  db: Db,
  input: DispatchInput,
): Promise<{ execution: ExecutionRow; created: boolean }> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction((tx) => createExecutionIn(tx, input));
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= 3) throw error;
    }
  }
}

/** The same, inside the caller's transaction (the scheduler's fire). */
export async function createExecutionIn(
  tx: Queryable,
  input: DispatchInput,
): Promise<{ execution: ExecutionRow; created: boolean }> {
  const dispatched = [
    input.mission,
    input.agent,
    input.input,
    input.threads?.map((thread) => [thread.agent, thread.input]) ?? null,
    input.priority,
    input.timeoutSeconds,
    // Only when given: a dispatch without one keeps the fingerprint it always had.
    ...(input.workspaceId ? [input.workspaceId] : []),
  ];
  const fingerprint = sha256(JSON.stringify(jsonbOrder(dispatched)));
  const existing = (
    await tx.query<ExecutionRow>(
      'select * from executions where tenant = $1 and execution_id = $2',
      [input.tenant, input.executionId],
    )
  ).rows[0];
  if (existing) {
    // Rows dispatched before fingerprints were canonical hold the hash of the input as it
    // was spelled: a retry spelled the same way still matches it.
    if (
      existing.fingerprint !== fingerprint &&
      existing.fingerprint !== sha256(JSON.stringify(dispatched))
    ) {
      throw new ParleyError(
        'execution_conflict',
        'this execution_id was already used for a different dispatch',
      );
    }
    return { execution: existing, created: false };
  }
  if (input.workspaceId && !(await holdWorkspace(tx, input.tenant, input.workspaceId))) {
    throw new ParleyError('workspace_not_found', 'workspace_id: no such workspace', {
      field: 'workspace_id',
    });
  }
  const parent = await insertExecution(tx, input, {
    executionId: input.executionId,
    agent: input.agent,
    visibility: input.visibility,
    input: input.input,
    spec: {
      ...input.spec,
      threads: input.threads?.map(({ agent, input }) => ({ agent, input })) ?? null,
    },
    fingerprint,
    parent: null,
  });
  for (const [index, thread] of (input.threads ?? []).entries()) {
    await insertExecution(tx, input, {
      executionId: `${input.executionId}.${index + 1}`,
      agent: thread.agent,
      visibility: thread.visibility,
      input: thread.input,
      spec: { ...input.spec, prompt: thread.prompt, threads: null },
      fingerprint,
      parent: input.executionId,
    });
  }
  await notifyWakeup(tx, { kind: 'execution', sessionId: parent.session_id, sequence: 1 });
  return { execution: parent, created: true };
}

async function insertExecution(
  tx: Queryable,
  input: DispatchInput,
  row: {
    executionId: string;
    agent: string;
    visibility: Visibility;
    input: Record<string, unknown>;
    spec: ExecutionSpec;
    fingerprint: string;
    parent: string | null;
  },
): Promise<ExecutionRow> {
  const session = await createSession(tx, {
    tenant: input.tenant,
    sessionId: newSessionId(),
    agent: row.agent,
    title: `${input.mission} (${row.executionId})`,
    greeting: null,
    owner: input.user,
    visibility: row.visibility,
    workspaceId: input.workspaceId ?? null,
  });
  const inserted = await tx.query<ExecutionRow>(
    `insert into executions (tenant, execution_id, mission, agent, user_name, session_id,
                             parent_execution_id, schedule, fire_time, after_execution_id,
                             fingerprint, input, spec, interrupt_to, priority, status, loop_status,
                             max_iterations, next_run_at, timeout_at, mission_revision,
                             workspace_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 'starting',
             case when $16::text is null then null else 'idle' end, $17,
             now(),
             now() + $18::double precision * interval '1 second', $19, $20)
     returning *`,
    [
      input.tenant,
      row.executionId,
      input.mission,
      row.agent,
      input.user,
      session.session_id,
      row.parent,
      input.schedule?.name ?? null,
      input.schedule?.fireTime ?? null,
      row.parent === null ? (input.afterExecutionId ?? null) : null,
      row.fingerprint,
      JSON.stringify(row.input),
      JSON.stringify(row.spec),
      input.interruptTo,
      input.priority,
      row.spec.threads === null ? row.spec.loop_prompt : null,
      input.maxIterations,
      input.timeoutSeconds,
      input.missionRevision ?? null,
      input.workspaceId ?? null,
    ],
  );
  const execution = inserted.rows[0] as ExecutionRow;
  await journalEvents(tx, session.session_id, [executionStatusEvent(execution)]);
  return execution;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
