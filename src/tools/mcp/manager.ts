import type { McpServerConfig } from '../../config/types.js';
import type { ToolRegistry } from '../registry.js';
import { McpConnection, type McpConnectionDeps, type McpStatus } from './connection.js';

export type { McpStatus };

/**
 * The MCP servers of one process. Lifecycle: `start()` once at process start (each server
 * gets one connection attempt, bounded by its connect timeout, and they run in parallel;
 * a server that fails is reported in `status()` and retried in the background, never
 * failing start-up), then the registry follows each server's tool list on its own
 * (`tools/list_changed`, restarts), then `stop()` at shutdown ends the stdio processes.
 */
export class McpManager {
  private readonly connections: McpConnection[];

  constructor(
    servers: Record<string, McpServerConfig>,
    registry: ToolRegistry,
    deps: Omit<McpConnectionDeps, 'onTools'>,
  ) {
    this.connections = Object.values(servers).map(
      (server) =>
        new McpConnection(server, {
          ...deps,
          onTools: (tools) => registry.replaceSource(`mcp:${server.name}`, tools),
        }),
    );
  }

  async start(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.start()));
  }

  status(): McpStatus[] {
    return this.connections.map((connection) => connection.status());
  }

  async stop(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.stop()));
  }
}

/** The start-up lines: one per server, saying whether its tools are there. */
export function describeMcp(status: McpStatus[]): string[] {
  return status.map((server) =>
    server.state === 'ready'
      ? `mcp ${server.name} (${server.transport}): ready, ${server.tools} tool(s)`
      : `mcp ${server.name} (${server.transport}): NOT available (${server.error ?? server.state}); retrying in the background`,
  );
}
