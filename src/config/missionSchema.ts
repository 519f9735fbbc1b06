import { z } from 'zod';
import { namespaceName } from './agentSchema.js';
import { durationMs, maxMissionIterations, maxMissionSeconds } from './schemaUnits.js';

// The configuration file's missions and schedules (CONFIG.md); types in missionTypes.ts.

/** Mission names appear in URLs (`/api/v1/missions/{name}/executions`) and execution ids. */
export const missionName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'letters, digits, _ and - (at most 64)');

/** Who answers an execution's approvals and questions (a person, anyone with a role, an agent). */
export const interruptTo = z
  .string()
  .regex(/^(user|role|agent):[^\s:][^\s]{0,127}$/, 'must be user:NAME, role:NAME or agent:NAME');

export const priorityName = z.enum(['low', 'normal', 'high', 'urgent']);

/** A mission: what to do, by default with which agent, once or as a loop. */
export const missionSchema = z
  .object({
    namespace: namespaceName.default('default'),
    agent: z.string().min(1).max(128).nullable().default(null),
    prompt: z.string().min(1),
    loop_prompt: z.string().min(1).nullable().default(null),
    max_iterations: z.number().int().positive().max(maxMissionIterations).default(10),
    loop_delay_seconds: z.number().nonnegative().max(maxMissionSeconds).default(0),
    input_schema: z.record(z.string(), z.unknown()).nullable().default(null),
    interrupt_to: interruptTo.nullable().default(null),
    priority: priorityName.default('normal'),
    timeout_seconds: z.number().positive().max(maxMissionSeconds).nullable().default(null),
    // How long the approvals its executions' turns raise wait (over the agent's, under a
    // tool entry's), and what applies when nobody answers in time (approve: operator only).
    approval_timeout_ms: durationMs.nullable().default(null),
    on_timeout: z.enum(['reject', 'approve']).nullable().default(null),
  })
  .strict();

/** A schedule's name is part of its executions' ids (`sched.NAME.EPOCH`). */
export const scheduleName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'letters, digits, _ and - (at most 64)');

export const scheduleSchema = z
  .object({
    mission: missionName,
    cron: z.string().min(1).max(200),
    timezone: z.string().min(1).default('UTC'),
    input: z.record(z.string(), z.unknown()).default({}),
    overlap: z.enum(['skip', 'queue', 'cancel_previous']).default('skip'),
    catch_up: z.enum(['none', 'one', 'all']).default('one'),
    // (added) whose executions these are: schedules are configuration, executions belong
    // to a tenant and a user like any other.
    tenant: z.string().min(1).default('default'),
    user: z.string().min(1).default('scheduler'),
  })
  .strict();
