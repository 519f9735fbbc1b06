import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../../config/types.js';
import type { Logger } from '../../log.js';
import { ToolError, type JsonSchema, type Tool } from '../types.js';
import { compileSchema } from '../validate.js';
import { exposedToolName } from './names.js';

/*
 * One MCP server, kept connected. States:
 *   connecting → ready            initialized and its tools listed
 *   ready → down                  the stdio process exited or the connection closed
 *   connecting | down → (wait) → connecting   retried with exponential backoff
 *   any → stopped                 stop(): no more retries, the process is ended
 * While not ready, its tools stay in the registry (the model keeps seeing them), report
 * themselves unavailable, and every call fails as a tool error; a failure here never
 * throws into the runtime or start-up.
 */
export type McpState = 'connecting' | 'ready' | 'down' | 'stopped';

export interface McpStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: McpState;
  tools: number;
  /** Why it is not ready (no secrets: an error code or HTTP status, never a body). */
  error: string | null;
  restarts: number;
}

export interface McpConnectionDeps {
  /** The server's environment, where `env_from` and `headers_from_env` values are read. */
  env: Record<string, string | undefined>;
  log: Logger;
  /** Receives the server's tools every time they are (re)listed. */
  onTools: (tools: Tool[]) => void;
  /** Delay before retry number `attempt` (from 1). Default: 500 ms doubling, at most 30 s. */
  backoffMs?: (attempt: number) => number;
}

type CallResult = {
  content?: { type: string; text?: string; mimeType?: string; data?: string }[];
  structuredContent?: unknown;
  isError?: boolean;
};

const defaultBackoff = (attempt: number) => Math.min(30_000, 500 * 2 ** (attempt - 1));

/** The SDK, loaded when a server is first connected: most processes configure none. */
const loadSdk = async () => {
  const [client, stdio, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
  };
};
type Sdk = Awaited<ReturnType<typeof loadSdk>>;

/** A short, secret-free reason: HTTP status, errno code, or a generic word. */
function describeFailure(error: unknown): string {
  if (error instanceof ToolError) return error.message;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'number' && code >= 100 && code < 600) return `HTTP ${code}`;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
  if (typeof code === 'number' && code === -32001) return 'timed out';
  return 'connection failed';
}

/**
 * The server answered the call with a JSON-RPC error (an McpError: a negative code other
 * than the SDK's own timeout): its code and, shortened, its message — the server's answer,
 * which the model reads; never a transport failure's details.
 */
export function serverRefusal(error: unknown): string | null {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'number' || code >= 0 || code === -32001) return null;
  const message = error instanceof Error ? error.message.replace(/^MCP error -?\d+: /, '') : '';
  return `error ${code}${message ? `: ${message.slice(0, 300)}` : ''}`;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new ToolError('timeout', `${what} timed out`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** What the model reads of a call's content: text as text, other parts described. */
function readableContent(result: CallResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const parts = result.content ?? [];
  if (parts.every((part) => part.type === 'text')) {
    return parts.map((part) => part.text ?? '').join('\n');
  }
  return parts.map((part) =>
    part.type === 'text'
      ? { type: 'text', text: part.text }
      : { type: part.type, mime_type: part.mimeType ?? null, note: 'binary content not shown' },
  );
}

export class McpConnection {
  private client: Client | null = null;
  private state: McpState = 'connecting';
  private error: string | null = null;
  private restarts = 0;
  private attempt = 0;
  private toolCount = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Exposed name → the server's own name. */
  private names = new Map<string, string>();

  constructor(
    readonly config: McpServerConfig,
    private readonly deps: McpConnectionDeps,
  ) {}

  status(): McpStatus {
    return {
      name: this.config.name,
      transport: this.config.transport,
      state: this.state,
      tools: this.toolCount,
      error: this.error,
      restarts: this.restarts,
    };
  }

  /** Connects once (bounded by the connect timeout); on failure, retries in the background. */
  async start(): Promise<void> {
    await this.connect();
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    await client?.close().catch(() => undefined);
  }

  /** Runs one tool of this server; any failure is a ToolError the model sees. */
  async call(exposed: string, args: unknown, signal: AbortSignal, timeoutMs: number) {
    const client = this.client;
    if (this.state !== 'ready' || !client) {
      throw new ToolError(
        'unavailable',
        `the MCP server ${this.config.name} is not available right now` +
          `${this.error ? ` (${this.error})` : ''}; nothing ran`,
      );
    }
    let result: CallResult;
    try {
      result = (await client.callTool(
        { name: this.names.get(exposed) ?? exposed, arguments: args as Record<string, unknown> },
        undefined,
        { signal, timeout: timeoutMs },
      )) as CallResult;
    } catch (error) {
      if (signal.aborted && signal.reason instanceof ToolError) throw signal.reason;
      const refused = serverRefusal(error);
      if (refused !== null) {
        throw new ToolError(
          'tool_failed',
          `the MCP server ${this.config.name} refused the call (${refused})`,
        );
      }
      const reason = describeFailure(error);
      throw new ToolError(
        reason === 'timed out' ? 'timeout' : 'unavailable',
        `the MCP server ${this.config.name} did not answer the call (${reason})`,
      );
    }
    if (result.isError) {
      const text = (result.content ?? []).map((part) => part.text ?? '').join('\n');
      throw new ToolError('tool_failed', text || `${exposed} failed`);
    }
    return readableContent(result);
  }

  private transport(sdk: Sdk): Transport {
    const { config, deps } = this;
    if (config.transport === 'stdio') {
      const env: Record<string, string> = {};
      for (const name of config.envFrom) {
        const value = deps.env[name];
        if (value !== undefined) env[name] = value;
      }
      const transport = new sdk.StdioClientTransport({
        command: config.command,
        args: config.args,
        env,
        stderr: 'pipe',
        ...(config.cwd ? { cwd: config.cwd } : {}),
      });
      // The server's own diagnostics, at debug level only: they are its words, not ours.
      transport.stderr?.on('data', (chunk: Buffer) =>
        deps.log.debug({ mcp: config.name, stderr: chunk.toString().slice(0, 2000) }, 'mcp stderr'),
      );
      return transport;
    }
    const headers: Record<string, string> = {};
    for (const [header, variable] of Object.entries(config.headersFromEnv)) {
      const value = deps.env[variable];
      if (value !== undefined) headers[header] = value;
    }
    return new sdk.StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers } });
  }

  private async connect(): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'connecting';
    const sdk = await loadSdk();
    if (this.state !== 'connecting') return;
    const client = new sdk.Client({ name: 'parley', version: '1' }, { capabilities: {} });
    this.client = client;
    try {
      await withTimeout(
        client.connect(this.transport(sdk)),
        this.config.connectTimeoutMs,
        'connecting',
      );
      client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
        void this.refresh(client);
      });
      client.onclose = () => this.lost(client, 'the connection closed');
      await this.refresh(client);
      if (this.client !== client) return;
      this.state = 'ready';
      this.error = null;
      this.attempt = 0;
      this.deps.log.info({ mcp: this.config.name, tools: this.toolCount }, 'mcp server ready');
    } catch (error) {
      if (this.client !== client) return;
      // Detach first, so the close below is not reported as a second loss.
      this.lost(client, describeFailure(error));
      await client.close().catch(() => undefined);
    }
  }

  /** Lists the server's tools (every page) and hands them to the registry. */
  private async refresh(client: Client): Promise<void> {
    const listed: Awaited<ReturnType<Client['listTools']>>['tools'] = [];
    let cursor: string | undefined;
    do {
      const page = await withTimeout(
        client.listTools(cursor ? { cursor } : {}, { timeout: this.config.connectTimeoutMs }),
        this.config.connectTimeoutMs,
        'listing tools',
      );
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    if (this.client !== client) return;
    const names = new Map<string, string>();
    const tools: Tool[] = [];
    for (const tool of listed) {
      // Parley calls tools directly; a tool that only runs as an MCP task is not offered.
      if (tool.execution?.taskSupport === 'required') {
        this.deps.log.info(
          { mcp: this.config.name, tool: tool.name },
          'mcp tool needs task-based execution, which Parley does not use; not offered',
        );
        continue;
      }
      const exposed = exposedToolName(this.config.name, tool.name);
      const inputSchema = tool.inputSchema as JsonSchema;
      try {
        compileSchema(inputSchema);
      } catch {
        this.deps.log.warn(
          { mcp: this.config.name, tool: tool.name },
          'mcp tool schema invalid; skipped',
        );
        continue;
      }
      names.set(exposed, tool.name);
      tools.push(this.toolFor(exposed, tool.description ?? tool.name, inputSchema));
    }
    this.names = names;
    this.toolCount = tools.length;
    this.deps.onTools(tools);
  }

  private toolFor(name: string, description: string, inputSchema: JsonSchema): Tool {
    return {
      name,
      description,
      inputSchema,
      source: `mcp:${this.config.name}`,
      defaultPolicy: 'approve',
      defaultTimeoutMs: this.config.callTimeoutMs,
      execute: (args, context) => this.call(name, args, context.signal, context.timeoutMs),
      available: () => this.state === 'ready',
    };
  }

  /** The connection is gone (or never came): report it and retry after a backoff. */
  private lost(client: Client, reason: string): void {
    if (this.client !== client || this.state === 'stopped') return;
    this.client = null;
    const wasReady = this.state === 'ready';
    this.state = 'down';
    this.error = reason;
    this.attempt += 1;
    if (wasReady) this.restarts += 1;
    const delay = (this.deps.backoffMs ?? defaultBackoff)(this.attempt);
    this.deps.log.warn(
      { mcp: this.config.name, reason, retry_in_ms: delay },
      'mcp server unavailable; retrying',
    );
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }
}
