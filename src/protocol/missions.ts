import { z } from 'zod';
import { timestamp, usageTotals } from './rest.js';

/**
 * The REST resources of missions (executions, missions, schedules) and of checkpoints,
 * declared once like those of rest.ts: the server's routes validate and document them,
 * `parley/client` takes its types from them (type imports only).
 */

export const executionStatus = z.enum([
  'starting',
  'running',
  'success',
  'interrupted',
  'cancelled',
  'timeout',
  'error',
  'waiting',
  'blocked',
  'limit_reached',
]);

export const loopStatus = z.enum([
  'idle',
  'running',
  'evaluating',
  'waiting',
  'blocked',
  'completed',
  'failed',
  'limit_reached',
]);

export const loopDecision = z.object({
  decision: z.enum(['continue', 'complete', 'blocked']),
  reason: z.string(),
  iteration: z.number().int(),
});

export const priority = z.enum(['low', 'normal', 'high', 'urgent']);

/** An execution's projection (GET /api/v1/executions/{id}), with seed 003's names. */
export const execution = z
  .object({
    execution_id: z.string(),
    mission: z.string(),
    agent: z.string(),
    user: z.string(),
    session_id: z.string().meta({ description: 'its events stream over this session' }),
    workspace_id: z
      .string()
      .nullable()
      .meta({ description: 'the workspace it was dispatched in (its session is in it too)' }),
    status: executionStatus,
    loop_status: loopStatus.nullable(),
    iteration: z.number().int(),
    max_iterations: z.number().int(),
    next_run_at: timestamp.nullable(),
    loop_decision: loopDecision.nullable(),
    result: z.unknown().meta({
      description:
        '{content} of the last reply, {error: {code, message}}, or {threads: [...]} of a fan-out',
    }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Execution' });

/** Where a definition comes from: shipped, or the tenant's own (customized or created). */
export const definitionOrigin = {
  is_customized: z
    .boolean()
    .meta({ description: "the tenant's own definition (edited or created)" }),
  content_hash: z.string().nullable(),
  shipped_content_hash: z.string().nullable(),
  shipped_changed: z
    .boolean()
    .meta({ description: 'customized, and the configuration ships another version since' }),
};

/** A mission as any principal of its tenant may know it (never its prompts). */
export const mission = z
  .object({
    name: z.string(),
    namespace: z.string(),
    agent: z.string(),
    loop: z.boolean(),
    max_iterations: z.number().int(),
    loop_delay_seconds: z.number(),
    input_schema: z.record(z.string(), z.unknown()).nullable(),
    interrupt_to: z.string().nullable(),
    priority,
    timeout_seconds: z.number().nullable(),
    approval_timeout_ms: z.number().int().nullable().meta({
      description: "how long its executions' approvals wait (null: the agent's)",
    }),
    on_timeout: z.enum(['reject', 'approve']).nullable().meta({
      description: "what applies when such an approval's deadline passes (null: reject)",
    }),
    ...definitionOrigin,
  })
  .meta({ id: 'Mission' });

/** The answer of an execution's cancel or unblock. */
export const executionCommandAnswer = z.object({
  result: z.enum(['cancelled', 'unblocked', 'duplicate', 'too_late']),
  status: z.enum([...executionStatus.options, 'cancelling']).meta({
    description: "the execution's status; `cancelling` while its running turn is cancelled",
  }),
});

/** A schedule with its next and last fire times (GET /api/v1/schedules). */
export const schedule = z
  .object({
    name: z.string(),
    mission: z.string(),
    cron: z.string(),
    timezone: z.string(),
    overlap: z.string(),
    catch_up: z.string(),
    enabled: z.boolean().meta({
      description:
        'false while an admin has switched it off (PATCH /api/v1/schedules/{name}): it does not fire',
    }),
    next_fire_at: timestamp.nullable(),
    last_fire_at: timestamp.nullable(),
    last_execution_id: z.string().nullable(),
  })
  .meta({ id: 'Schedule' });

/** A checkpoint: the session as it stood after one `done`. */
export const checkpoint = z
  .object({
    sequence: z.number().int().meta({
      description:
        "the done event's sequence: what fork's at_sequence and rewind's to_sequence name",
    }),
    turn_ids: z.array(z.string()),
    message_id: z.string().nullable(),
    transcript_position: z
      .number()
      .int()
      .meta({ description: 'transcript messages up to and including its reply' }),
    usage: usageTotals,
    rewound: z.boolean().meta({
      description: "a later rewind went back before it: the next turns' history leaves it out",
    }),
    at: timestamp,
  })
  .meta({ id: 'Checkpoint' });

/** The answer of a rewind: the `rewound` event's sequence. */
export const rewindAnswer = z.object({
  session_id: z.string(),
  to_sequence: z.number().int(),
  sequence: z.number().int(),
});

export type ExecutionStatus = z.infer<typeof executionStatus>;
export type LoopStatus = z.infer<typeof loopStatus>;
export type Execution = z.infer<typeof execution>;
export type Mission = z.infer<typeof mission>;
export type ExecutionCommandAnswer = z.infer<typeof executionCommandAnswer>;
export type Schedule = z.infer<typeof schedule>;
export type Checkpoint = z.infer<typeof checkpoint>;
export type RewindAnswer = z.infer<typeof rewindAnswer>;
