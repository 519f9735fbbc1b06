import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { soakMissions } from './missions.js';
import { soakSchedules } from './schedules.js';

/** Short leases, so that a killed or paused worker's sessions move within seconds. */
export const leaseTtlMs = 3_000;

/**
 * The configuration every soak process runs with (docs/configuration.md): dev mode on
 * 127.0.0.1, a short lease, small polls, and an agent whose `calculator` needs a person's
 * approval (so approvals happen under chaos) while `clock` runs freely (so allowed tools
 * do too). Storage and port come from the environment (DATABASE_URL, PARLEY_PORT); `extra`
 * adds top-level keys (the webhook endpoint, whose receiver's port is the run's).
 */
export function writeParleyConfig(directory: string, extra: Record<string, unknown> = {}): string {
  const path = join(directory, 'parley.yaml');
  const config = {
    server: { host: '127.0.0.1', keepalive_ms: 2_000 },
    storage: { pool_size: 4 },
    runtime: {
      lease_ttl_ms: leaseTtlMs,
      heartbeat_ms: 1_000,
      poll_ms: 250,
      retry_base_ms: 50,
      shutdown_grace_ms: 2_000,
      max_parallel_turns: 8,
    },
    agents: {
      default: {
        model: 'demo/echo',
        tools: { calculator: 'approve', clock: 'allow' },
        pending_input: 'supersede',
      },
    },
    // Executions and schedules driven under the same chaos (missions.ts, schedules.ts).
    missions: soakMissions,
    schedules: soakSchedules,
    ...extra,
  };
  writeFileSync(path, stringify(config));
  return path;
}
