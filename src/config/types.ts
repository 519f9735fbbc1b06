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
  tools: Record<string, 'allow' | 'approve' | 'deny'>;
  budgets: { maxIterations: number; maxToolCalls: number; onExhausted: 'ask' | 'finish' };
  pendingInput: 'supersede' | 'queue';
  completionText: string | null;
}

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
    /** Headers and body of a request must arrive within this (slow clients). */
    requestTimeoutMs: number;
    /** When set, GET /metrics needs this bearer key (its sha256; the key is never kept). */
    metricsKeySha256: string | null;
  };
  limits: {
    /** Open SSE streams per principal (per API process); more → 429 too_many_streams. */
    streamsPerPrincipal: number;
    /** A stream whose client leaves this many bytes unread is closed (it resumes later). */
    streamBufferBytes: number;
  };
  storage: { dataDir: string; url: string | null; poolSize: number };
  runtime: RuntimeConfig;
  retention: { keepEventsDays: number | null; pruneIntervalMs: number };
  /** `dev`: no keys, loopback only, one local principal with every role. */
  auth: { mode: 'dev' | 'keys'; keys: ApiKey[] };
  providers: Record<string, ProviderConfig>;
  pricing: Record<string, { input: number; output: number }>;
  agents: Record<string, AgentConfig>;
  demo: { delayMs: number };
  /** Where the configuration came from, for the start-up line. */
  source: string;
}

export const devPrincipal: Principal = { tenant: 'default', user: 'local', roles: ['*'] };

/**
 * The agent of that name, if configured. Never a plain `agents[name]`: a name such as
 * `constructor` or `__proto__` must not reach an object's prototype.
 */
export function agentNamed(config: Config, name: string): AgentConfig | undefined {
  return Object.hasOwn(config.agents, name) ? config.agents[name] : undefined;
}
