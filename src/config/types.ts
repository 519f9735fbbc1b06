/**
 * The compiled configuration: validated once at start-up (config/load.ts) and passed to
 * every part by value. Nothing reads the file or the environment after this.
 */
export interface Principal {
  tenant: string;
  user: string;
  roles: string[];
}

export interface ApiKey {
  /** sha256 of the key, lowercase hex. The key itself is never kept. */
  sha256: string;
  principal: Principal;
}

export interface AgentConfig {
  name: string;
  model: { provider: string; modelId: string };
  instructions: string;
  greeting: string | null;
  triggerRoles: string[] | null;
  approverRoles: string[] | null;
  /**
   * Tool entries by name as the file lists them: a tool name, or `server__*` for every
   * tool of an MCP server. `tools/registry.ts` resolves them against the tools that exist.
   */
  tools: Record<string, AgentToolConfig>;
  /** Skills (folders of `skills_dir`) this agent may load with `load_skill`. */
  skills: string[];
  budgets: { maxIterations: number; maxToolCalls: number; onExhausted: 'ask' | 'finish' };
  pendingInput: 'supersede' | 'queue';
  completionText: string | null;
}

/** One tool entry of an agent, compiled: the policy is always set (the tool's default). */
export interface AgentToolConfig {
  policy: 'allow' | 'approve' | 'deny';
  /** Per-call time limit; null: the tool's default. */
  timeoutMs: number | null;
  /** Re-run a call found `running` after a crash (else it is recorded as interrupted). */
  idempotent: boolean;
  /** The tool's own keys, as its `compileOptions` made them (http_fetch, shell). */
  options: unknown;
}

interface McpServerBase {
  name: string;
  connectTimeoutMs: number;
  /** Default time limit of a call of this server's tools (an agent entry may override). */
  callTimeoutMs: number;
}

/** An MCP server: a command run over stdio, or a Streamable HTTP endpoint. */
export type McpServerConfig =
  | (McpServerBase & {
      transport: 'stdio';
      command: string;
      args: string[];
      /** Names of variables passed from Parley's environment; nothing else is. */
      envFrom: string[];
      cwd: string | null;
    })
  | (McpServerBase & {
      transport: 'http';
      url: string;
      /** Header name → the variable holding its value (read when connecting). */
      headersFromEnv: Record<string, string>;
    });

export interface ProviderConfig {
  name: string;
  kind: 'demo' | 'openai' | 'openai_compatible' | 'anthropic' | 'google' | 'ollama';
  apiKeyEnv: string | null;
  baseUrl: string | null;
}

export interface RuntimeConfig {
  leaseTtlMs: number;
  heartbeatMs: number;
  maxParallelTurns: number;
  parkAfterAttempts: number;
  pollMs: number;
  retryAttempts: number;
  retryBaseMs: number;
  historyMessages: number;
  shutdownGraceMs: number;
  deltaBatchMs: number;
  deltaBatchBytes: number;
}

export interface Config {
  server: {
    host: string;
    port: number;
    keepaliveMs: number;
    bodyLimitBytes: number;
    maxMessageBytes: number;
  };
  storage: { dataDir: string; url: string | null; poolSize: number };
  runtime: RuntimeConfig;
  retention: { keepEventsDays: number | null; pruneIntervalMs: number };
  /** `dev`: no keys, loopback only, one local principal with every role. */
  auth: { mode: 'dev' | 'keys'; keys: ApiKey[] };
  providers: Record<string, ProviderConfig>;
  pricing: Record<string, { input: number; output: number }>;
  agents: Record<string, AgentConfig>;
  tools: {
    maxConcurrency: number;
    maxResultBytes: number;
    /** Root of the per-session working directories: `<root>/<tenant>/<session>`. */
    workspaceDir: string;
  };
  skillsDir: string;
  mcpServers: Record<string, McpServerConfig>;
  demo: { delayMs: number };
  /** Where the configuration came from, for the start-up line. */
  source: string;
}

export const devPrincipal: Principal = { tenant: 'default', user: 'local', roles: ['*'] };
