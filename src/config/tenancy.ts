import { isDeepStrictEqual } from 'node:util';
import { checkStateSchema } from './tenantStateSchema.js';
import { z } from 'zod';
import { defaultImageModel } from '../tools/generateImage.js';
import { listedHumanOnly } from '../tools/humanOnly.js';
import { askUserTool, builtInTools, mcpToolPattern } from '../tools/registry.js';
import { defaultLimits } from '../tools/shell/limits.js';
import { ConfigError } from './errors.js';
import {
  agentSchema,
  missionSchema,
  type AgentFile,
  type ConfigFile,
  type MissionFile,
  type ToolEntryFile,
} from './schema.js';
import type { AgentPolicy, McpServerConfig } from './types.js';

/**
 * The privilege layer between the operator and the tenants. The operator's file decides
 * everything; a tenant admin's `PUT /api/v1/agents/{name}` (or `/missions/{name}`) may set
 * only what `tenancy.agent_policy` leaves to tenants. What a tenant may send is a schema of
 * its own, derived from the operator's (`tenantAgentSchema`, `tenantMissionSchema`): the
 * same shape, plus the tenant's limits as issues of that schema. Two kinds of issue:
 *
 * - an *operator-only key* (403 `operator_only_key`): a key whose value reaches past the
 *   tenant — a shell's sandbox, environment and network, http_fetch's private addresses, a
 *   tool the policy does not list, an MCP server not granted to the tenant, removing
 *   `human_only`;
 * - a number above its *ceiling* (400 `invalid_definition`, naming the ceiling).
 *
 * Whatever the operator's own definition of the same name says, a tenant may repeat: a
 * key is allowed with exactly the operator's value, a number up to the operator's value,
 * so a GET → PUT round trip of a shipped definition always works.
 */

/** Marks a schema issue as an operator-only key (the API answers 403). */
const operatorOnlyParam = { privilege: 'operator_only' } as const;

/** A tenant's definition sets a key only the operator may set. */
export class OperatorOnlyKeyError extends Error {
  constructor(
    /** The key's path inside the definition, e.g. `tools.shell.sandbox`. */
    readonly key: string,
    message: string,
  ) {
    super(message);
    this.name = 'OperatorOnlyKeyError';
  }
}

/**
 * Keys of a built-in tool's entry that only the operator sets, each with the value a
 * tenant gets when the key is absent (which a tenant may also write out).
 */
const operatorOnlyOptions: Record<string, Record<string, unknown>> = {
  shell: { sandbox: 'bwrap', env: [], network: false },
  http_fetch: { allow_private: false },
  // Which provider's credential (and bill) image generation uses: the operator's choice.
  generate_image: { model: defaultImageModel },
};

/** Numeric keys of a built-in tool's entry and the policy ceiling that bounds each. */
const toolCeilings: Record<string, Record<string, [keyof AgentPolicy, string]>> = {
  http_fetch: {
    max_bytes: ['maxBytes', 'max_bytes'],
    max_redirects: ['maxRedirects', 'max_redirects'],
  },
  shell: { max_output_bytes: ['maxOutputBytes', 'max_output_bytes'] },
};

const builtIns = builtInTools();
const builtInNames = new Set([...builtIns.keys(), askUserTool]);

/**
 * `tenancy.agent_policy` compiled. Its tools are built-in ones, or MCP tools
 * (`server__tool`, `server__*`) of configured servers, which it grants to every tenant
 * (`mcp_servers.X.tenants` grants a server to some).
 */
export function compileAgentPolicy(file: ConfigFile): AgentPolicy {
  const policy = file.tenancy.agent_policy;
  policy.tools.forEach((name, index) => {
    if (builtInNames.has(name)) return;
    const server = mcpToolPattern.exec(name)?.[1];
    if (server !== undefined && Object.hasOwn(file.mcp_servers, server)) return;
    const hint =
      server !== undefined
        ? `no MCP server named "${server}" in mcp_servers`
        : `no such tool (${[...builtInNames].sort().join(', ')}, or server__tool of an MCP server)`;
    throw new ConfigError(`tenancy.agent_policy.tools.${index}: ${hint}`);
  });
  return {
    tools: policy.tools,
    maxTimeoutMs: policy.max_timeout_ms,
    maxBytes: policy.max_bytes,
    maxOutputBytes: policy.max_output_bytes,
    maxRedirects: policy.max_redirects,
    maxIterations: policy.max_iterations,
    maxToolCalls: policy.max_tool_calls,
    maxOutputTokens: policy.max_output_tokens,
    maxMissionIterations: policy.max_mission_iterations,
    maxMissionTimeoutSeconds: policy.max_mission_timeout_seconds,
    maxLoopDelaySeconds: policy.max_loop_delay_seconds,
  };
}

/** Who edits, and what the operator decided for them. */
export interface TenantScope {
  tenant: string;
  policy: AgentPolicy;
  mcpServers: Readonly<Record<string, McpServerConfig>>;
  /** The operator's `tools.human_only`. */
  humanOnly: readonly string[];
}

/** Is the MCP server granted to this tenant's own definitions (`mcp_servers.X.tenants`)? */
export function serverGranted(server: McpServerConfig | undefined, tenant: string): boolean {
  if (!server) return false;
  return server.tenants === '*' || server.tenants.includes(tenant);
}

/** Is this MCP entry (`server__tool` or `server__*`) granted to the tenant's definitions? */
function mcpEntryGranted(scope: TenantScope, server: string, name: string): boolean {
  return (
    serverGranted(scope.mcpServers[server], scope.tenant) ||
    scope.policy.tools.includes(name) ||
    scope.policy.tools.includes(`${server}__*`)
  );
}

/**
 * The MCP servers a tenant's definition may be offered tools of (AgentConfig.mcpGrants):
 * those granted to the tenant (by the server's `tenants`, or the policy's tools), and those
 * the operator's definition of the same name lists (the tenant may keep the operator's
 * entries, exactly).
 */
export function mcpGrantsFor(scope: TenantScope, shipped: AgentFile | null): string[] {
  const granted = Object.values(scope.mcpServers)
    .filter(
      (server) =>
        serverGranted(server, scope.tenant) ||
        scope.policy.tools.some((name) => mcpToolPattern.exec(name)?.[1] === server.name),
    )
    .map((server) => server.name);
  const kept = Object.keys(shipped?.tools ?? {}).flatMap((name) => {
    const server = mcpToolPattern.exec(name)?.[1];
    return server !== undefined && Object.hasOwn(scope.mcpServers, server) ? [server] : [];
  });
  return [...new Set([...granted, ...kept])].sort();
}

export type Report = (path: (string | number)[], message: string, operatorOnly: boolean) => void;

function reporter(ctx: z.RefinementCtx): Report {
  return (path, message, operatorOnly) =>
    ctx.addIssue({
      code: 'custom',
      path,
      message,
      ...(operatorOnly ? { params: operatorOnlyParam } : {}),
    });
}

/**
 * A number of a tenant's definition: at most its ceiling, or the operator's value for the
 * same key when that is higher.
 */
function ceiling(
  report: Report,
  path: (string | number)[],
  value: number | null | undefined,
  limit: { value: number; key: string },
  operators: unknown,
): void {
  if (typeof value !== 'number') return;
  const bound = typeof operators === 'number' ? Math.max(limit.value, operators) : limit.value;
  if (value > bound) {
    const why =
      bound === limit.value
        ? `tenancy.agent_policy.${limit.key}`
        : "the operator's definition of this name";
    report(path, `at most ${bound} (${why})`, false);
  }
}

function tableOf(entry: ToolEntryFile | undefined): Record<string, unknown> | undefined {
  if (entry === undefined) return undefined;
  return typeof entry === 'string' ? { policy: entry } : entry;
}

/** An entry as compared with the operator's: `human_only` apart (checked on its own). */
function comparable(table: Record<string, unknown>, name: string): Record<string, unknown> {
  const { human_only: _humanOnly, ...rest } = table;
  const defaultPolicy = builtIns.get(name)?.defaultPolicy;
  const policy = rest.policy ?? defaultPolicy ?? (mcpToolPattern.test(name) ? 'approve' : 'allow');
  return { ...rest, policy };
}

function checkTool(
  report: Report,
  scope: TenantScope,
  name: string,
  entry: ToolEntryFile,
  shippedEntry: ToolEntryFile | undefined,
): void {
  const table = tableOf(entry) as Record<string, unknown>;
  const operators = tableOf(shippedEntry);
  const server = mcpToolPattern.exec(name)?.[1];
  const isMcp = server !== undefined && Object.hasOwn(scope.mcpServers, server);
  // A remote A2A agent (a URL the server calls, a key it sends): the operator's alone.
  if (Object.hasOwn(table, 'a2a') && table.policy !== 'deny') {
    if (!operators || !isDeepStrictEqual(table, operators)) {
      report(['tools', name, 'a2a'], 'a2a tools are set by the operator only', true);
    }
    return;
  }
  // An unknown tool, or a server that is not configured, is the compiler's 400.
  if (!builtInNames.has(name) && !isMcp) return;
  const path = ['tools', name];
  if (table.policy === 'deny') return; // never offered, never runs

  // human_only: a tenant may add it, never remove what the operator set.
  const operatorSetsIt =
    operators?.human_only === true ||
    (listedHumanOnly(scope.humanOnly, name) && operators?.human_only !== false);
  const removes =
    operators?.human_only === true
      ? table.human_only !== true
      : table.human_only === false && operatorSetsIt;
  if (operatorSetsIt && removes) {
    report([...path, 'human_only'], 'only the operator removes human_only', true);
  }
  // on_timeout: approve runs a call nobody approved: only the operator decides that, and
  // a tenant keeping the operator's approve may not make it come sooner.
  if (table.on_timeout === 'approve') {
    if (operators?.on_timeout !== 'approve') {
      report([...path, 'on_timeout'], 'only the operator sets on_timeout: approve', true);
    } else if (
      typeof operators.approval_timeout_ms === 'number' &&
      table.approval_timeout_ms !== operators.approval_timeout_ms
    ) {
      report(
        [...path, 'approval_timeout_ms'],
        "with on_timeout: approve, only the operator's value",
        true,
      );
    }
  }

  const granted = isMcp ? mcpEntryGranted(scope, server, name) : scope.policy.tools.includes(name);
  if (!granted) {
    if (operators && isDeepStrictEqual(comparable(table, name), comparable(operators, name))) {
      return; // the operator's own entry, kept exactly
    }
    report(
      path,
      isMcp
        ? `the MCP server "${server}" is not granted to this tenant (mcp_servers.${server}.tenants)`
        : 'this tool is not in tenancy.agent_policy.tools: only the operator enables it',
      true,
    );
    return;
  }
  for (const [key, fallback] of Object.entries(operatorOnlyOptions[name] ?? {})) {
    if (!Object.hasOwn(table, key)) continue;
    const allowed = operators && Object.hasOwn(operators, key) ? operators[key] : fallback;
    if (!isDeepStrictEqual(table[key], allowed)) {
      report([...path, key], 'set by the operator only', true);
    }
  }
  const limits = {
    ...toolCeilings[name],
    timeout_ms: ['maxTimeoutMs', 'max_timeout_ms'],
  } as Record<string, [keyof AgentPolicy, string]>;
  for (const [key, [field, policyKey]] of Object.entries(limits)) {
    const value = table[key];
    if (typeof value !== 'number') continue;
    ceiling(
      report,
      [...path, key],
      value,
      { value: scope.policy[field] as number, key: policyKey },
      operators?.[key],
    );
  }
  if (name === 'shell') shellLimitCeilings(report, path, table.limits, operators?.limits, scope);
}

/**
 * A tenant's shell may ask for less than the built-in limits, never more (output: at most
 * `max_output_bytes`), unless the operator's definition of the same name allows more.
 */
function shellLimitCeilings(
  report: Report,
  path: (string | number)[],
  limits: unknown,
  operators: unknown,
  scope: TenantScope,
): void {
  if (typeof limits !== 'object' || limits === null) return;
  const own = limits as Record<string, unknown>;
  const operatorLimits = (typeof operators === 'object' && operators) || {};
  const bounds: Record<string, number> = {
    memory_mb: defaultLimits.memoryMb,
    cpu_seconds: defaultLimits.cpuSeconds,
    processes: defaultLimits.processes,
    workspace_mb: defaultLimits.workspaceMb,
  };
  for (const [key, bound] of Object.entries(bounds)) {
    const value = own[key];
    const operatorValue = (operatorLimits as Record<string, unknown>)[key];
    const allowed = typeof operatorValue === 'number' ? Math.max(bound, operatorValue) : bound;
    if (typeof value === 'number' && value > allowed) {
      report([...path, 'limits', key], `at most ${allowed} (the built-in shell limit)`, false);
    }
  }
  ceiling(
    report,
    [...path, 'limits', 'output_bytes'],
    own.output_bytes as number | undefined,
    { value: scope.policy.maxOutputBytes, key: 'max_output_bytes' },
    (operatorLimits as Record<string, unknown>).output_bytes,
  );
}

/**
 * What a tenant may send as an agent definition: the operator's agent schema, with the
 * tenant's limits. `shipped` is the operator's file definition of the same name (defaults
 * applied), or null for a name the file does not have.
 */
export function tenantAgentSchema(scope: TenantScope, shipped: AgentFile | null) {
  const { policy } = scope;
  return agentSchema.superRefine((agent, ctx) => {
    const report = reporter(ctx);
    ceiling(
      report,
      ['budgets', 'max_iterations'],
      agent.budgets.max_iterations,
      { value: policy.maxIterations, key: 'max_iterations' },
      shipped?.budgets.max_iterations,
    );
    ceiling(
      report,
      ['budgets', 'max_tool_calls'],
      agent.budgets.max_tool_calls,
      { value: policy.maxToolCalls, key: 'max_tool_calls' },
      shipped?.budgets.max_tool_calls,
    );
    ceiling(
      report,
      ['max_output_tokens'],
      agent.max_output_tokens,
      { value: policy.maxOutputTokens, key: 'max_output_tokens' },
      shipped?.max_output_tokens,
    );
    ceiling(
      report,
      ['gate', 'timeout_ms'],
      agent.gate?.timeout_ms,
      { value: policy.maxTimeoutMs, key: 'max_timeout_ms' },
      shipped?.gate?.timeout_ms,
    );
    for (const [name, entry] of Object.entries(agent.tools)) {
      const operators =
        shipped && Object.hasOwn(shipped.tools, name) ? shipped.tools[name] : undefined;
      checkTool(report, scope, name, entry, operators);
    }
    if (agent.state) checkStateSchema(report, agent.state.schema, shipped?.state?.schema);
  });
}

/**
 * The same for a mission: its numbers within the policy's ceilings, and `on_timeout:
 * approve` only as the operator's definition of the same name has it (with its
 * `approval_timeout_ms`), as for a tool entry.
 */
export function tenantMissionSchema(policy: AgentPolicy, shipped: MissionFile | null) {
  return missionSchema.superRefine((mission, ctx) => {
    const report = reporter(ctx);
    if (mission.on_timeout === 'approve') {
      if (shipped?.on_timeout !== 'approve') {
        report(['on_timeout'], 'only the operator sets on_timeout: approve', true);
      } else if (mission.approval_timeout_ms !== shipped.approval_timeout_ms) {
        report(
          ['approval_timeout_ms'],
          "with on_timeout: approve, only the operator's value",
          true,
        );
      }
    }
    ceiling(
      report,
      ['max_iterations'],
      mission.max_iterations,
      { value: policy.maxMissionIterations, key: 'max_mission_iterations' },
      shipped?.max_iterations,
    );
    ceiling(
      report,
      ['timeout_seconds'],
      mission.timeout_seconds,
      { value: policy.maxMissionTimeoutSeconds, key: 'max_mission_timeout_seconds' },
      shipped?.timeout_seconds,
    );
    ceiling(
      report,
      ['loop_delay_seconds'],
      mission.loop_delay_seconds,
      { value: policy.maxLoopDelaySeconds, key: 'max_loop_delay_seconds' },
      shipped?.loop_delay_seconds,
    );
  });
}

/**
 * Parses a tenant's definition with its schema. The tenant's limits are checked on a
 * definition that fits the operator's schema; among them an operator-only key wins over a
 * ceiling (403 names it); else the first issue is a ConfigError naming the key (400).
 * Never echoes a value.
 */
export function parseTenantDefinition<T>(schema: z.ZodType<T>, raw: unknown, where: string): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues;
  const forbidden = issues.find(
    (issue) =>
      issue.code === 'custom' &&
      (issue.params as Record<string, unknown> | undefined)?.privilege ===
        operatorOnlyParam.privilege,
  );
  const issue = forbidden ?? issues[0];
  const key = (issue?.path ?? []).map(String).join('.');
  const message = `${[where, key].filter(Boolean).join('.')}: ${issue?.message ?? 'invalid'}`;
  if (forbidden) throw new OperatorOnlyKeyError(key, message);
  throw new ConfigError(message);
}
