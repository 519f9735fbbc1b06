import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { soakBudgets, stepBudgets, stepsAgent } from './budgets.js';
import { stateAgent, stateConfig } from './state.js';
import { soakMissions } from './missions.js';
import { soakSchedules } from './schedules.js';

/** Short leases, so that a killed or paused worker's sessions move within seconds. */
export const leaseTtlMs = 3_000;

/** How long a `calculator` approval waits before it times out (rejected). */
export const approvalTimeoutMs = 4_000;

/**
 * The configuration every soak process runs with (docs/configuration.md): dev mode on
 * 127.0.0.1, a short lease, small polls, and an agent whose `calculator` needs a person's
 * approval (so approvals happen under chaos) while `clock` runs freely (so allowed tools
 * do too), with a tool budget a `budget` round exceeds. `additions` adds MCP servers and
 * agent tools (the effect tools); `extra` adds top-level keys (the webhook endpoint, whose
 * receiver's port is the run's). Storage and port come from the environment
 * (DATABASE_URL, PARLEY_PORT).
 */
export function writeParleyConfig(
  directory: string,
  engine: 'postgres' | 'pglite',
  additions: { mcpServers?: Record<string, unknown>; agentTools?: Record<string, unknown> } = {},
  extra: Record<string, unknown> = {},
): string {
  const path = join(directory, 'parley.yaml');
  const config = {
    server: { host: '127.0.0.1', keepalive_ms: 2_000 },
    // The embedded engine vacuums every few seconds, so that its VACUUM runs under the kills
    // too (a `parley serve` lives tens of seconds here; PostgreSQL ignores the key).
    storage: { pool_size: 4, embedded_vacuum_interval_ms: 5_000 },
    runtime: {
      lease_ttl_ms: leaseTtlMs,
      heartbeat_ms: 1_000,
      poll_ms: 250,
      retry_base_ms: 50,
      shutdown_grace_ms: 2_000,
      // The PostgreSQL soak runs three workers; the embedded one, one process doing all of
      // their work, so it takes as many turns at once as the three together.
      max_parallel_turns: engine === 'pglite' ? 24 : 8,
      // A saturated machine (load ~10 on two cores, processes frozen and killed) can put
      // the scheduler minutes behind the every-second schedule; catch-up must not drop
      // the fire times the checker holds it to.
      max_catch_up_fires: 3_600,
    },
    mcp_servers: { ...additions.mcpServers },
    agents: {
      default: {
        model: 'demo/echo',
        // An approval nobody answers ends at its deadline with the safe default (reject).
        tools: {
          calculator: { policy: 'approve', approval_timeout_ms: approvalTimeoutMs },
          clock: 'allow',
          // The media client's image turns (demo/image: a PNG drawn from the prompt).
          generate_image: 'allow',
          // `question` rounds: the agent asks the person; unanswered, question_timeout_ms ends it.
          ask_user: 'allow',
          ...additions.agentTools,
        },
        pending_input: 'supersede',
        // A question (`ask_user`) or a client tool's call its client never answers ends at
        // this deadline (`question_timeout`, `client_tool_timeout`).
        question_timeout_ms: approvalTimeoutMs,
        budgets: soakBudgets,
      },
      // A second agent whose step budget finishes a turn (`steps` rounds, budgets.ts).
      [stepsAgent]: {
        model: 'demo/echo',
        tools: { clock: 'allow' },
        budgets: stepBudgets,
      },
      // A third agent whose sessions keep a domain state (AG-UI `state` runs, state.ts).
      [stateAgent]: { model: 'demo/echo', state: stateConfig },
    },
    // Executions and schedules driven under the same chaos (missions.ts, schedules.ts).
    missions: soakMissions,
    schedules: soakSchedules(engine),
    ...extra,
  };
  writeFileSync(path, stringify(config));
  return path;
}
