import { join } from 'node:path';
import { builtInTools, askUserTool, mcpToolPattern } from '../tools/registry.js';
import type { ConfigFile, ToolEntryFile } from './schema.js';
import type { AgentToolConfig, Config, EscalationStep, McpServerConfig } from './types.js';

/** An escalation chain as the file writes it, compiled. */
export function escalationSteps(steps: { after_ms: number; to: string }[]): EscalationStep[] {
  return steps.map((step) => ({ afterMs: step.after_ms, to: step.to }));
}

/** A configuration mistake, worded for the start-up message (the key is prefixed by the caller). */
export class ToolConfigError extends Error {}

const builtIns = builtInTools();

/** The names an agent may list besides MCP tools, for the error message. */
export function knownToolNames(): string[] {
  return [...builtIns.keys(), askUserTool].sort();
}

/**
 * Compiles an agent's `tools` entries: each names a built-in tool, `ask_user`, an MCP
 * tool `server__tool` or a whole server `server__*` of a configured server. Built-in
 * tools check their own keys; `ask_user` and MCP tools have none. Errors name the key.
 */
export function compileAgentTools(
  agent: string,
  entries: Record<string, ToolEntryFile>,
  mcpServers: Readonly<Record<string, unknown>>,
): Record<string, AgentToolConfig> {
  const compiled: Record<string, AgentToolConfig> = {};
  for (const [name, entry] of Object.entries(entries)) {
    const where = `agents.${agent}.tools.${name}`;
    const table = typeof entry === 'string' ? { policy: entry } : entry;
    const {
      policy,
      timeout_ms: timeoutMs,
      idempotent,
      human_only: humanOnly,
      approval_timeout_ms: approvalTimeoutMs,
      on_timeout: onTimeout,
      escalate,
      remind_before_ms: remindBeforeMs,
      on_unknown: onUnknown,
      ...own
    } = table;
    // An entry with an `a2a` key is a tool of the a2a kind, whatever its name.
    const tool = Object.hasOwn(own, 'a2a') ? builtIns.get('a2a') : builtIns.get(name);
    const mcp = mcpToolPattern.exec(name);
    if (!tool && name !== askUserTool && !(mcp && Object.hasOwn(mcpServers, mcp[1] as string))) {
      const hint = mcp
        ? `no MCP server named "${mcp[1]}" in mcp_servers`
        : `no such tool (available: ${knownToolNames().join(', ')}, or server__tool of an MCP server)`;
      throw new ToolConfigError(`${where}: ${hint}`);
    }
    let options: unknown = {};
    if (tool?.compileOptions) {
      try {
        options = tool.compileOptions(own);
      } catch (error) {
        throw new ToolConfigError(`${where}.${(error as Error).message}`);
      }
    } else {
      const unknown = Object.keys(own)[0];
      if (unknown !== undefined) {
        throw new ToolConfigError(
          `${where}.${unknown}: unknown key (policy, timeout_ms, idempotent, human_only, approval_timeout_ms, on_timeout, escalate, remind_before_ms, on_unknown)`,
        );
      }
    }
    compiled[name] = {
      policy: policy ?? tool?.defaultPolicy ?? (mcp ? 'approve' : 'allow'),
      timeoutMs: timeoutMs ?? null,
      idempotent: idempotent ?? false,
      humanOnly: humanOnly ?? false,
      approvalTimeoutMs: approvalTimeoutMs ?? null,
      onTimeout: onTimeout ?? null,
      escalate: escalate === undefined ? null : escalationSteps(escalate),
      remindBeforeMs: remindBeforeMs ?? null,
      onUnknown: onUnknown ?? 'interrupted',
      options,
    };
  }
  return compiled;
}

function compileMcpServer(
  name: string,
  server: ConfigFile['mcp_servers'][string],
): McpServerConfig {
  const base = {
    name,
    tenants: server.tenants,
    connectTimeoutMs: server.connect_timeout_ms,
    callTimeoutMs: server.call_timeout_ms,
  };
  if ('command' in server) {
    return {
      ...base,
      transport: 'stdio',
      command: server.command,
      args: server.args,
      envFrom: server.env_from,
      cwd: server.cwd,
    };
  }
  return { ...base, transport: 'http', url: server.url, headersFromEnv: server.headers_from_env };
}

/** The top-level tool keys: `tools`, `skills_dir`, `mcp_servers`. */
export function compileToolSettings(
  file: ConfigFile,
): Pick<Config, 'tools' | 'skillsDir' | 'mcpServers'> {
  const mcpServers: Record<string, McpServerConfig> = {};
  for (const [name, server] of Object.entries(file.mcp_servers)) {
    mcpServers[name] = compileMcpServer(name, server);
  }
  file.tools.human_only.forEach((name, index) => {
    const server = mcpToolPattern.exec(name)?.[1];
    const known =
      builtIns.has(name) ||
      name === askUserTool ||
      (server !== undefined && Object.hasOwn(mcpServers, server));
    if (!known) {
      throw new ToolConfigError(
        `tools.human_only.${index}: no such tool (a built-in tool, or server__tool / server__* of an MCP server)`,
      );
    }
  });
  return {
    tools: {
      maxConcurrency: file.tools.max_concurrency,
      maxResultBytes: file.tools.max_result_bytes,
      humanOnly: file.tools.human_only,
      workspaceDir: file.tools.workspace_dir ?? join(file.storage.data_dir, 'workspaces'),
    },
    skillsDir: file.skills_dir,
    mcpServers,
  };
}
