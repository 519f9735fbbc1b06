import { compileAgent } from '../config/agents.js';
import { ConfigError } from '../config/errors.js';
import { defaultAgentName } from '../config/load.js';
import { compileMission } from '../config/missions.js';
import type { AgentFile, MissionFile } from '../config/schema.js';
import {
  mcpGrantsFor,
  parseTenantDefinition,
  tenantAgentSchema,
  tenantMissionSchema,
  type TenantScope,
} from '../config/tenancy.js';
import type { Config } from '../config/types.js';
import { shellSandboxProblem } from '../tools/shell/startup.js';
import { checkAgentSkills, type SkillCatalog } from '../tools/skills/catalog.js';

/**
 * A tenant's own definitions compiled as the tenant's (the directory's, directory.ts):
 * through the privilege layer (config/tenancy.ts), the operator's policy, the sandbox's
 * availability and the skills catalog — exactly as start-up compiles the configuration.
 */
export interface TenantCompileDeps {
  config: Config;
  /** Why bubblewrap does not work here (checked once, when first needed), or null. */
  sandboxProblem: () => string | null;
  /** Whether the tenant has an agent of that name (a mission's `agent`). */
  hasAgent: (tenant: string, agent: string) => boolean;
  skills?: SkillCatalog;
}

export function tenantScope(config: Config, tenant: string): TenantScope {
  return {
    tenant,
    policy: config.tenancy.agentPolicy,
    mcpServers: config.mcpServers,
    humanOnly: config.tools.humanOnly,
  };
}

/** A tenant's agent definition through the privilege layer, compiled as the tenant's own. */
export function compileTenantAgent(
  deps: TenantCompileDeps,
  tenant: string,
  name: string,
  raw: unknown,
) {
  const { config } = deps;
  const shipped = Object.hasOwn(config.shipped.agents, name)
    ? (config.shipped.agents[name] as AgentFile)
    : null;
  const scope = tenantScope(config, tenant);
  const parsed = parseTenantDefinition(tenantAgentSchema(scope, shipped), raw, `agents.${name}`);
  const agent = compileAgent(name, parsed, {
    providers: config.providers,
    mcpServers: config.mcpServers,
    voices: config.voices,
    owner: { tenant, mcpGrants: mcpGrantsFor(scope, shipped) },
  });
  const sandbox = shellSandboxProblem(agent, deps.sandboxProblem);
  if (sandbox !== null) throw new ConfigError(sandbox);
  if (deps.skills) {
    const [problem] = checkAgentSkills(deps.skills, { [name]: parsed }, config.skillsDir);
    if (problem !== undefined) throw new ConfigError(problem);
  }
  return { agent, parsed };
}

export function compileTenantMission(
  deps: TenantCompileDeps,
  tenant: string,
  name: string,
  raw: unknown,
) {
  const { config } = deps;
  const shipped = Object.hasOwn(config.shipped.missions, name)
    ? (config.shipped.missions[name] as MissionFile)
    : null;
  const parsed = parseTenantDefinition(
    tenantMissionSchema(config.tenancy.agentPolicy, shipped),
    raw,
    `missions.${name}`,
  );
  return { mission: compileMission(name, parsed, missionContext(deps, tenant)), parsed };
}

export function missionContext(deps: TenantCompileDeps, tenant: string) {
  return {
    hasAgent: (agent: string) => deps.hasAgent(tenant, agent),
    defaultAgent: defaultAgentName(deps.config),
    maxIterationsCap: deps.config.limits.missionIterations,
  };
}
