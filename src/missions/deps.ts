import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { AgentLookup, MissionLookup } from '../agents/lookup.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import type { Telemetry } from '../telemetry/tracing.js';
import type { Wakeups } from '../store/wakeups.js';

/** Everything the execution runner and the scheduler touch, injected. */
export interface ExecutionDeps {
  db: Db;
  wakeups: Wakeups;
  config: Config;
  resolveModel: (provider: string, modelId: string) => LanguageModelV3;
  agents: AgentLookup;
  missions: MissionLookup;
  log: Logger;
  /** Identifies this worker in `lease_owner` (diagnostics only). */
  owner: string;
  random?: () => number;
  /** Spans of evaluations and approval decisions (telemetry/); default: none. */
  telemetry?: Telemetry;
  /** The scheduler's clock (tests freeze and advance it); the database's clock times leases. */
  now?: () => Date;
}
