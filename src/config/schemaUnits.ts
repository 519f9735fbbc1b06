import { z } from 'zod';

/**
 * Absolute ceilings, for the operator's file as much as for a tenant's definition. A Node
 * timer longer than 2^31-1 ms fires at once, so no duration may exceed it; the time limit
 * of one call (a tool, the gate, an MCP server's connect) is at most a day.
 */
export const maxTimerMs = 2_147_483_647;
export const maxCallTimeoutMs = 86_400_000;
export const maxBudgetIterations = 1000;
export const maxBudgetToolCalls = 10_000;
export const maxOutputTokensCeiling = 1_000_000;
export const maxMissionIterations = 10_000;
/** A year: a mission's loop delay and its time limit are durable timers in the database. */
export const maxMissionSeconds = 31_536_000;
export const durationMs = z.number().int().positive().max(maxTimerMs);
export const callTimeoutMs = z.number().int().positive().max(maxCallTimeoutMs);
export const modelName = z.string().regex(/^[^/]+\/.+$/, 'must be "provider/model"');
/** An environment variable's name: credentials are never written in the file itself. */
export const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

export const policy = z.enum(['allow', 'approve', 'deny']);
