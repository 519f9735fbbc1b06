import {
  configAgents,
  configMissions,
  type AgentLookup,
  type MissionLookup,
} from '../agents/lookup.js';
import type { Directory } from '../agents/directory.js';
import type { SyncReport } from '../catalog/sync.js';
import type { PlatformSet } from '../adapters/platformSet.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import type { Telemetry } from '../telemetry/tracing.js';
import type { Wakeups } from '../store/wakeups.js';
import type { SessionHandoff } from '../store/admitTurn.js';
import type { McpStatus } from '../tools/mcp/manager.js';
import type { Tool } from '../tools/types.js';
import { createSpeech, type Speech } from '../speech/speech.js';

export interface ApiDeps {
  db: Db;
  wakeups: Wakeups;
  config: Config;
  log: Logger;
  /** Are the configured providers usable? For /readyz. */
  providersReady: () => boolean;
  /** Syncs the model catalog (all providers, or one): `POST /api/v1/admin/models/sync`. */
  syncModels?: (provider: string | null) => Promise<SyncReport[]>;
  /** The process's tools (built-in and MCP), for `GET /api/v1/agents/{name}/tools`. */
  tools?: ReadonlyMap<string, Tool>;
  /** The MCP servers' state, for the same listing. */
  mcpStatus?: () => McpStatus[];
  /** The configured chat platforms, for their inbound endpoints. */
  platforms?: PlatformSet | null;
  /** The built web app's folder (default: dist/web of this package). */
  webDir?: string | undefined;
  /** Agents and missions per tenant (default: the configuration's, unedited). */
  agents?: AgentLookup;
  missions?: MissionLookup;
  /** The definitions behind them, for PUT/DELETE of agents and missions (admin). */
  directory?: Directory;
  /** A span per admission (telemetry/); default: none. */
  telemetry?: Telemetry;
  /** Voices and synthesis (speech/); default: the configuration's, keys from process.env. */
  speech?: Speech;
  /**
   * Hold every JSON response to its route's schema, failing the request with a 500 on a
   * mismatch (the test suite turns this on; production serializes without checking).
   */
  checkResponses?: boolean;
  /**
   * The worker of this process (`parley serve`), if any: an admission to a session no one
   * is answering claims it for that worker when it has a free slot.
   */
  handoff?: SessionHandoff;
}

export function agentsOf(deps: ApiDeps): AgentLookup {
  return deps.agents ?? configAgents(deps.config);
}

export function missionsOf(deps: ApiDeps): MissionLookup {
  return deps.missions ?? configMissions(deps.config);
}

const defaultSpeech = new WeakMap<ApiDeps, Speech>();

export function speechOf(deps: ApiDeps): Speech {
  if (deps.speech) return deps.speech;
  let speech = defaultSpeech.get(deps);
  if (!speech) defaultSpeech.set(deps, (speech = createSpeech(deps.config, { env: process.env })));
  return speech;
}
