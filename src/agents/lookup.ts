import { defaultAgentName } from '../config/load.js';
import { agentNamed, type AgentConfig, type Config, type MissionConfig } from '../config/types.js';

/**
 * How every part finds an agent or a mission of a tenant. The configuration ships them;
 * the database may hold a tenant's edited or created ones (directory.ts), so nothing reads
 * `config.agents` for this any more.
 */
export interface AgentLookup {
  get(tenant: string, name: string): AgentConfig | undefined;
  list(tenant: string): AgentConfig[];
  /** The agent a turn without `agent` gets. */
  defaultName(tenant: string): string;
  /**
   * Why the tenant's own definition of that name is refused (directory.ts: it no longer
   * passes the operator's checks), else null. `get` answers undefined for a refused one.
   */
  refused?(tenant: string, name: string): string | null;
  /**
   * The revision of the definition `get` answers (`definitions.revision`), recorded on a
   * turn when it starts; null or absent: none (the configuration's lookup).
   */
  revision?(tenant: string, name: string): number | null;
  /**
   * The agent as it was at `revision`, for a turn that started with it: compiled from the
   * kept revision. null: that revision can no longer be loaded or no longer compiles.
   */
  pinned?(tenant: string, name: string, revision: number): Promise<AgentConfig | null>;
}

export interface MissionLookup {
  get(tenant: string, name: string): MissionConfig | undefined;
  list(tenant: string): MissionConfig[];
  /** The revision of the definition `get` answers, recorded on an execution it starts. */
  revision?(tenant: string, name: string): number | null;
}

/** The shipped definitions only: for tests and tools that have no database. */
export function configAgents(config: Config): AgentLookup {
  return {
    get: (_tenant, name) => agentNamed(config, name),
    list: () => Object.values(config.agents),
    defaultName: () => defaultAgentName(config),
  };
}

export function configMissions(config: Config): MissionLookup {
  return {
    get: (_tenant, name) =>
      Object.hasOwn(config.missions, name) ? config.missions[name] : undefined,
    list: () => Object.values(config.missions),
  };
}

/** The agent a session of `tenant` names: the directory's, else the configuration's. */
export function agentFor(
  deps: { config: Config; agents?: AgentLookup | undefined },
  tenant: string,
  name: string,
): AgentConfig | undefined {
  return (deps.agents ?? configAgents(deps.config)).get(tenant, name);
}
