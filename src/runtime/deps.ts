import type { LanguageModelV3 } from '@ai-sdk/provider';
import type { AgentLookup } from '../agents/lookup.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import type { Telemetry } from '../telemetry/tracing.js';
import type { Wakeups } from '../store/wakeups.js';
import type { SkillCatalog } from '../tools/skills/catalog.js';
import type { Tool } from '../tools/types.js';
import type { ModelInfoLookup } from './modelInfo.js';

/** Everything the worker touches, injected: the loop itself holds no I/O of its own. */
export interface RuntimeDeps {
  db: Db;
  wakeups: Wakeups;
  config: Config;
  resolveModel: (provider: string, modelId: string) => LanguageModelV3;
  log: Logger;
  /** Identifies this worker in `lease_owner` (diagnostics only; the token is the lease). */
  owner: string;
  /** The tools agents may use, by name (built-ins: tools/registry.ts). */
  tools: Map<string, Tool>;
  random?: () => number;
  /** The catalog's view of a model (context window, vision); null when unknown. */
  modelInfo?: ModelInfoLookup;
  /** The skills of `skills_dir`, for the system prompt of agents that list some. */
  skills?: SkillCatalog;
  /** Agents per tenant, edits included (agents/directory.ts); default: the configuration's. */
  agents?: AgentLookup;
  /** Spans of turns, model calls and tool calls (telemetry/); default: none at all. */
  telemetry?: Telemetry;
}
