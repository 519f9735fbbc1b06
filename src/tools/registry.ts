import type { AgentConfig, AgentToolConfig } from '../config/types.js';
import type { Queryable } from '../store/db.js';
import { a2aTool, a2aToolNamed, createA2a, isA2aOptions } from './a2a/index.js';
import { calculator } from './calculator.js';
import { createClock } from './clock.js';
import { createHttpFetch } from './httpFetch/index.js';
import type { Resolve } from './httpFetch/lookup.js';
import { createGenerateImage, type ImageIo } from './generateImage.js';
import { createForget } from './memory/forget.js';
import { createRecall } from './memory/recall.js';
import { remember } from './memory/remember.js';
import { createShell } from './shell/index.js';
import type { SkillCatalog } from './skills/catalog.js';
import { createLoadSkill } from './skills/loadSkill.js';
import { createShowPanel, createUpdatePanel } from './panels.js';
import { createUpdateState, updateStateTool } from './state/updateState.js';
import { reconcileCall, runTool, type ToolOutcome } from './run.js';
import {
  ToolError,
  type CallScope,
  type Credentials,
  type Policy,
  type Reconciled,
  type Tool,
  type ToolSource,
} from './types.js';
import { validateArguments } from './validate.js';

export { validateArguments };
export { runTool, type RunToolOptions, type ToolOutcome } from './run.js';

/** The question tool: handled by the runtime (a person answers), not executed here. */
export const askUserTool = 'ask_user';
export const loadSkillTool = 'load_skill';
/** `server__tool` or `server__*` (every tool of the server). */
export const mcpToolPattern = /^([a-zA-Z0-9-]+(?:_[a-zA-Z0-9-]+)*)__(.+)$/;
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/** What the built-in tools need from the process: injected, so tests can swap each. */
export interface ToolIo {
  db?: Queryable;
  skills?: SkillCatalog;
  /** Name resolution for http_fetch (tests make a name resolve to 127.0.0.1). */
  resolve?: Resolve;
  /** The server's environment, which `shell` passes variables from (only those listed). */
  env?: Record<string, string | undefined>;
  /** The image models `generate_image` calls (start-up: the configured providers). */
  images?: Omit<ImageIo, 'db'>;
}

const noDatabase: Queryable = {
  query: () => Promise.reject(new ToolError('unavailable', 'memory is not available here')),
};

/** The built-in tools, by name. Without `io` they still describe themselves (config checks). */
export function builtInTools(io: ToolIo = {}): Map<string, Tool> {
  const db = io.db ?? noDatabase;
  const tools: Tool[] = [
    createClock(),
    calculator,
    createHttpFetch(io.resolve),
    createShell(io.env),
    remember,
    createRecall(db),
    createForget(db),
    createLoadSkill(io.skills ?? { skills: new Map(), broken: new Map() }),
    createUpdateState(db),
    createShowPanel(),
    createUpdatePanel(db),
    createA2a(io.env),
    createGenerateImage(io.db && io.images ? { ...io.images, db: io.db } : undefined),
  ];
  return new Map(tools.map((tool) => [tool.name, tool]));
}

/**
 * Every tool of a process by name: the built-ins, then each MCP server's tools as they
 * come and go (the MCP manager replaces a server's set when its list changes). A Map, so
 * the runtime reads it like any map of tools.
 */
export class ToolRegistry extends Map<string, Tool> {
  /** Replaces every tool of `source` with `tools` (an empty list removes them). */
  replaceSource(source: ToolSource, tools: readonly Tool[]): void {
    for (const [name, tool] of this) if (sourceOf(tool) === source) this.delete(name);
    for (const tool of tools) this.set(tool.name, tool);
  }
}

export function sourceOf(tool: Tool): ToolSource {
  return tool.source ?? 'built-in';
}

/** One tool as an agent has it: what runs, under which policy and limits. */
export interface ResolvedTool {
  name: string;
  /** Null when the agent lists it but it is not available now (its MCP server is down). */
  tool: Tool | null;
  source: ToolSource;
  policy: Policy;
  timeoutMs: number;
  idempotent: boolean;
  /** A call found started without a result after a crash: interrupted, or ask a person. */
  onUnknown: 'interrupted' | 'ask';
  /** The options `runTool` passes the tool (its compiled keys; load_skill: the skills). */
  options: unknown;
}

function resolved(
  name: string,
  tool: Tool | null,
  source: ToolSource,
  entry: AgentToolConfig | undefined,
  defaults: { policy: Policy; options: unknown },
): ResolvedTool {
  return {
    name,
    tool,
    source,
    policy: entry?.policy ?? defaults.policy,
    timeoutMs: entry?.timeoutMs ?? tool?.defaultTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    idempotent: entry?.idempotent ?? tool?.defaultIdempotent ?? false,
    onUnknown: entry?.onUnknown ?? 'interrupted',
    options: entry?.options ?? defaults.options,
  };
}

/**
 * The tools an agent has — exactly those it lists, nothing implicit — in a stable order:
 * its entries by name (`ask_user` included, its `tool` null: the runtime handles it), then
 * the tools of each MCP server it lists as `server__*` that it does not list by name (with
 * that entry's policy), then `load_skill` when the agent has skills, then `update_state`
 * when it has `state`. A tenant's own
 * definition is offered MCP tools only of the servers in its `mcpGrants` (granted to the
 * tenant, or kept from the operator's definition): checked here again, whatever the
 * definition says. `deny` tools are included (to show them); the runtime offers only the
 * others.
 */
export function resolveAgentTools(
  agent: AgentConfig,
  tools: ReadonlyMap<string, Tool>,
): ResolvedTool[] {
  const result: ResolvedTool[] = [];
  const listed = new Set<string>();
  const granted = (server: string) => agent.mcpGrants === null || agent.mcpGrants.includes(server);
  const servers: string[] = [];
  for (const [name, entry] of Object.entries(agent.tools)) {
    const server = mcpToolPattern.exec(name)?.[1];
    if (server !== undefined && !granted(server)) continue;
    if (name.endsWith('__*')) {
      if (server !== undefined) servers.push(server);
      continue;
    }
    listed.add(name);
    const kind = isA2aOptions(entry.options) ? tools.get(a2aTool) : undefined;
    const tool =
      name === askUserTool
        ? null
        : kind && isA2aOptions(entry.options)
          ? a2aToolNamed(kind, name, entry.options)
          : (tools.get(name) ?? null);
    const source = tool ? sourceOf(tool) : server ? (`mcp:${server}` as const) : 'built-in';
    const options =
      name === loadSkillTool
        ? { skills: agent.skills }
        : name === updateStateTool
          ? { state: agent.state }
          : entry.options;
    result.push(resolved(name, tool, source, { ...entry, options }, { ...entry, options }));
  }
  const mcp = [...tools.values()]
    .filter((tool) => servers.some((server) => sourceOf(tool) === `mcp:${server}`))
    .filter((tool) => !listed.has(tool.name))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const tool of mcp) {
    const server = sourceOf(tool).slice(4);
    const entry = agent.tools[`${server}__*`];
    result.push(
      resolved(tool.name, tool, sourceOf(tool), entry, { policy: 'approve', options: {} }),
    );
  }
  if (agent.skills.length > 0 && !listed.has(loadSkillTool)) {
    const tool = tools.get(loadSkillTool) ?? null;
    result.push(
      resolved(loadSkillTool, tool, 'skill', undefined, {
        policy: 'allow',
        options: { skills: agent.skills },
      }),
    );
  }
  if (agent.state !== null && !listed.has(updateStateTool)) {
    result.push(
      resolved(updateStateTool, tools.get(updateStateTool) ?? null, 'built-in', undefined, {
        policy: 'allow',
        options: { state: agent.state },
      }),
    );
  }
  return result;
}

/**
 * Runs one call of an agent's tool with everything its resolution says: the agent's
 * `timeout_ms` (else the tool's default), its options, and `tools.max_result_bytes`. A
 * tool that is not available now (an MCP server down) is a tool error, not a throw.
 */
export async function runResolvedTool(
  resolved: ResolvedTool,
  args: unknown,
  call: {
    signal: AbortSignal;
    scope: CallScope | null;
    maxResultBytes: number;
    credentials?: Credentials;
  },
): Promise<ToolOutcome> {
  if (!resolved.tool) {
    return {
      ok: false,
      error: {
        code: 'unavailable',
        message: `the tool ${resolved.name} is not available right now; nothing ran`,
      },
      durationMs: 0,
    };
  }
  return runTool(resolved.tool, args, {
    signal: call.signal,
    timeoutMs: resolved.timeoutMs,
    scope: call.scope,
    options: resolved.options,
    maxResultBytes: call.maxResultBytes,
    ...(call.credentials ? { credentials: call.credentials } : {}),
  });
}

/**
 * Asks the tool's `reconcile` about a call whose result is unknown, under the agent's
 * time limit for the tool; `unknown` when the tool has none or is not available now.
 */
export async function reconcileResolvedTool(
  resolved: ResolvedTool,
  args: unknown,
  call: { signal: AbortSignal; scope: CallScope | null; credentials?: Credentials },
): Promise<Reconciled> {
  if (!resolved.tool) return 'unknown';
  return reconcileCall(resolved.tool, args, {
    signal: call.signal,
    timeoutMs: resolved.timeoutMs,
    scope: call.scope,
    options: resolved.options,
    ...(call.credentials ? { credentials: call.credentials } : {}),
  });
}
