import type { A2aConfig } from './a2a.js';
import type { HostRule } from '../tools/httpFetch/hosts.js';
import type { MissionConfig, ScheduleConfig } from './missionTypes.js';
import type { AdaptersConfig, WebhookConfig } from './platformTypes.js';
import type { AgentPolicy, BudgetConfig } from './governanceTypes.js';
import type { SpeechConfig, VoiceConfig } from './speechTypes.js';

export type { MissionConfig, Priority, ScheduleConfig } from './missionTypes.js';
export type { AgentPolicy, BudgetConfig } from './governanceTypes.js';
export type { SpeechConfig, VoiceConfig } from './speechTypes.js';

/**
 * The compiled configuration: validated once at start-up (config/load.ts) and passed to
 * every part by value. Nothing reads the file or the environment after this.
 */
export interface Principal {
  tenant: string;
  user: string;
  roles: string[];
  /**
   * The deployment's operator (`auth.keys[].operator`, and the dev-mode principal): may take
   * deployment-wide actions. For definitions it is still a tenant principal: the operator
   * edits agents in the file.
   */
  operator: boolean;
}

/** Who of a tenant may see a session (docs/PROTOCOL.md, "Owner and visibility"). */
export type Visibility = 'private' | 'tenant' | 'room';

export interface ApiKey {
  /** sha256 of the key, lowercase hex. The key itself is never kept. */
  sha256: string;
  principal: Principal;
}

/** A step of an approval's escalation: re-route it this long after it was made. */
export interface EscalationStep {
  afterMs: number;
  /** `user:NAME` or `role:NAME`. */
  to: string;
}

export interface AgentConfig {
  name: string;
  /** Groups agents in listings (`?namespace=`); names are unique across namespaces. */
  namespace: string;
  model: { provider: string; modelId: string };
  instructions: string;
  greeting: string | null;
  triggerRoles: string[] | null;
  approverRoles: string[] | null;
  /** How long an approval waits before its safe default applies; null: no deadline. */
  approvalTimeoutMs: number | null;
  /** Who else a pending approval goes to, and when (empty: nobody). */
  escalate: EscalationStep[];
  /** A reminder this long before an approval's deadline; null: none. */
  remindBeforeMs: number | null;
  /** How long an `ask_user` question waits for an answer; null: no deadline. */
  questionTimeoutMs: number | null;
  /**
   * Whose definition this is: null for the operator's file (a shipped definition), else the
   * tenant that customized or created it through the API.
   */
  owner: string | null;
  /**
   * The MCP servers whose tools this agent may be offered: null for the operator's file
   * definitions (whatever they list); for a tenant's, the servers granted to that tenant
   * (`mcp_servers.X.tenants`) and those whose entries it kept from the operator's
   * definition. Checked again when tools are resolved (tools/registry.ts).
   */
  mcpGrants: string[] | null;
  /**
   * Tool entries by name as the file lists them: a tool name, or `server__*` for every
   * tool of an MCP server. `tools/registry.ts` resolves them against the tools that exist.
   */
  tools: Record<string, AgentToolConfig>;
  /** Skills (folders of `skills_dir`) this agent may load with `load_skill`. */
  skills: string[];
  budgets: {
    maxIterations: number;
    maxToolCalls: number;
    onExhausted: 'ask' | 'finish';
    /** How long a `budget_extension` request waits before it counts as refused; null: no deadline. */
    extensionTimeoutMs: number | null;
  };
  pendingInput: 'supersede' | 'queue';
  completionText: string | null;
  /** `closing_sentence`: the reply's last sentence becomes `completionText`; `reply`: all of it. */
  completionReplaces: 'closing_sentence' | 'reply';
  /** Sampling settings passed to every model call of this agent (null: the provider's default). */
  temperature: number | null;
  maxOutputTokens: number | null;
  /** The AI SDK's `providerOptions`, passed through unchanged. */
  providerOptions: Record<string, Record<string, unknown>>;
  /** When images go to the model (prompt.ts): `auto` = the turn carrying them and the next. */
  vision: 'auto' | 'always' | 'never';
  /** Who of the tenant sees a new session of this agent (its creator may ask for another). */
  visibility: Visibility;
  /** The scope gate: a cheap model classifies each burst before the main model runs. */
  gate: GateConfig | null;
  /** Where model steps go while `model`'s provider circuit is open (null: they wait). */
  fallbackModel: { provider: string; modelId: string } | null;
  /** The session's domain state (docs/governance.md, "Sessions with state"); null: none. */
  state: AgentStateConfig | null;
  /** The voice its messages are read aloud in (a catalog id); null: `speech.defaultVoice`. */
  voice: string | null;
  /** Its picture: an https URL or a data: URL of an image (media/pictureUrl.ts); null: none. */
  icon: string | null;
}

/** A change of a session's domain state: a JSON merge patch, a result, completion. */
export interface StateChange {
  /** RFC 7386 merge patch applied to the current data (null: data unchanged). */
  set: Record<string, unknown> | null;
  /** Present (null included): the new result; absent: unchanged. */
  result?: unknown;
  complete: boolean;
}

export interface AgentStateConfig {
  /** The JSON Schema every value of the data must satisfy (compiled at start-up). */
  schema: Record<string, unknown>;
  /** Checks a value against `schema`: a message naming the first mismatch, or null. */
  validate: (data: unknown) => string | null;
  /** The data of a session nothing has written yet. */
  initial: Record<string, unknown>;
  /** Appended to the system prompt with `{{data}}` replaced by the JSON of the data. */
  prompt: string | null;
  /** Option values whose press changes the state and is answered without a model call. */
  options: Record<string, StateChange & { reply: string }>;
}

export interface GateConfig {
  model: { provider: string; modelId: string };
  topic: string;
  /** The reply when the gate says off-topic (or fails: it is fail-closed). */
  redirect: string;
  timeoutMs: number;
}

export type ProviderKind =
  | 'demo'
  | 'openai'
  | 'openai_compatible'
  | 'anthropic'
  | 'google'
  | 'ollama'
  | 'espeak'
  | 'piper'
  | 'elevenlabs'
  | 'fal';

/** Provider kinds that only speak (voices), with no language model. */
export const speechOnlyKinds: readonly ProviderKind[] = ['espeak', 'piper', 'elevenlabs'];

/** Capabilities as the catalog stores them; each key of an override is optional. */
export interface ModelCapabilities {
  tools: boolean | null;
  vision: boolean | null;
  reasoning: boolean | null;
  contextWindow: number | null;
  maxOutputTokens: number | null;
}

/** USD per million tokens; `cachedInput` prices prompt-cache reads (defaults to `input`). */
export interface Price {
  input: number;
  output: number;
  cachedInput: number;
  /** USD per generated image (image models); absent: images cost only their tokens. */
  perImage?: number;
  /** Transcription models: USD per minute of audio. */
  perMinute?: number;
}

/** One tool entry of an agent, compiled: the policy is always set (the tool's default). */
export interface AgentToolConfig {
  policy: 'allow' | 'approve' | 'deny';
  /** Per-call time limit; null: the tool's default. */
  timeoutMs: number | null;
  /** Re-run a call found `running` after a crash (else it is recorded as interrupted). */
  idempotent: boolean;
  /** Only a person may answer its approvals (besides the operator's `tools.human_only`). */
  humanOnly: boolean;
  /** How long its approvals wait (null: the agent's `approvalTimeoutMs`). */
  approvalTimeoutMs: number | null;
  /**
   * What applies when an approval's deadline passes unanswered (approve: operator only);
   * null: not set (a mission's, else reject).
   */
  onTimeout: 'reject' | 'approve' | null;
  /** Its approvals' escalation chain (null: the agent's). */
  escalate: EscalationStep[] | null;
  /** Its approvals' reminder (null: the agent's `remindBeforeMs`). */
  remindBeforeMs: number | null;
  /**
   * A non-idempotent call found started without a result after a crash: `interrupted`
   * (the model is told its result is unknown) or `ask` (a person says whether it took
   * effect: a `reconciliation` request).
   */
  onUnknown: 'interrupted' | 'ask';
  /** The tool's own keys, as its `compileOptions` made them (http_fetch, shell). */
  options: unknown;
}

interface McpServerBase {
  name: string;
  /** Tenants whose own definitions may list its tools (`'*'`: every tenant). */
  tenants: string[] | '*';
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
  kind: ProviderKind;
  /** The variable holding the API key; its value is read when the model is created. */
  apiKeyEnv: string | null;
  baseUrl: string | null;
  /** Extra request headers: header name → the variable holding its value. */
  headersFromEnv: Record<string, string>;
  /** openai only: Responses API (default) or Chat Completions. */
  api: 'responses' | 'chat';
  /** openai only: the model its voices speak with. */
  speechModel: string;
  /** A streaming call with no output this long after it was sent is aborted (0: never). */
  firstTokenTimeoutMs: number;
  /** A stream silent this long between two parts is aborted (0: never). */
  idleTimeoutMs: number;
  /** Consecutive transient failures that open the circuit (0: never), and for how long. */
  circuit: { failures: number; openMs: number };
}

export interface RuntimeConfig {
  leaseTtlMs: number;
  heartbeatMs: number;
  maxParallelTurns: number;
  parkAfterAttempts: number;
  /** Parking: `hold` keeps the turns queued behind the attempted ones; `fail` ends them too. */
  parkQueued: 'hold' | 'fail';
  pollMs: number;
  retryAttempts: number;
  retryBaseMs: number;
  historyMessages: number;
  shutdownGraceMs: number;
  deltaBatchMs: number;
  deltaBatchBytes: number;
  /** Executions one worker process advances at once. */
  maxParallelExecutions: number;
  /** An execution waiting for its turn is re-checked this often when no wake-up said it ended. */
  executionRecheckMs: number;
  evaluationTimeoutMs: number;
  /** A schedule's fire time later than this counts as missed (its `catch_up` decides). */
  scheduleGraceMs: number;
  maxCatchUpFires: number;
}

/**
 * A turn's step with no progress for `stallMs` (a model stream of keep-alives only, a
 * silent one, a tool that outlived its timeout) is aborted and retried, `retries` times per
 * turn; then the turn ends with error `stalled`. `stallMs` 0: no watchdog.
 */
export interface WatchdogConfig {
  stallMs: number;
  retries: number;
}

/** The `database` keys (PostgreSQL; PGlite has no connections to bound). 0 = no deadline. */
export interface DatabaseConfig {
  /** Longest one statement may run (server-side `statement_timeout`); COMMIT is exempt. */
  statementTimeoutMs: number;
  /** A session idle inside an open transaction this long is ended by the server. */
  idleInTransactionTimeoutMs: number;
  /** Longest establishing one connection may take (TCP, TLS, start-up, authentication). */
  connectTimeoutMs: number;
  /** Named prepared statements for the hot path; false behind a transaction pooler. */
  preparedStatements: boolean;
  /** A direct connection for LISTEN/NOTIFY when `storage.url` goes through a pooler. */
  listenUrl: string | null;
  /** A pooled connection idle this long is closed (0: never). */
  poolIdleMs: number;
}

/** The `telemetry` keys, compiled. */
export interface TelemetryConfig {
  /** Where spans are POSTed (`<otlp_endpoint>/v1/traces`); null: no telemetry at all. */
  tracesUrl: string | null;
  protocol: 'http/protobuf' | 'http/json';
  /** Header → the environment variable holding its value (checked set at start). */
  headersFromEnv: Record<string, string>;
  /** Message text, tool arguments and results in spans (off by default). */
  captureContent: boolean;
  serviceName: string;
}

export interface Config {
  server: {
    host: string;
    port: number;
    keepaliveMs: number;
    /** How far back each read of a user stream looks past the last one (`user_stream_overlap_ms`). */
    userStreamOverlapMs: number;
    /** A blocking request of a protocol adapter waits this long for its turn. */
    blockingWaitMs: number;
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
    /** Largest attachment accepted (413 past it, before the body is read). */
    attachmentBytes: number;
    /** The hard cap on a mission's `max_iterations`. */
    missionIterations: number;
    /** Images fetched by URL (the OpenAI-compatible API): from these hosts only. */
    remoteImages: { allowHosts: HostRule[]; allowPrivate: boolean; timeoutMs: number };
  };
  storage: {
    dataDir: string;
    url: string | null;
    poolSize: number;
    /** PGlite's shared_buffers, in MiB. */
    embeddedSharedBuffersMb: number;
    /** How often the embedded engine vacuums a database used since, in ms; 0: never. */
    embeddedVacuumIntervalMs: number;
  };
  /** PostgreSQL only: the deadlines of its connections, and how it is reached. */
  database: DatabaseConfig;
  runtime: RuntimeConfig;
  /** The progress watchdog (docs/governance.md, "Progress watchdog"). */
  watchdog: WatchdogConfig;
  /** What retention removes, and when (docs/retention.md); null days = keep forever. */
  retention: {
    keepEventsDays: number | null;
    /** Finished webhook deliveries and platform outbox rows. */
    keepDeliveriesDays: number | null;
    /** Whole idle sessions, with everything that hangs off them. */
    keepSessionsDays: number | null;
    keepUsageDays: number | null;
    pruneIntervalMs: number;
    /** Rows (or one session's journal events) deleted per statement. */
    pruneBatchSize: number;
    /** Deleting a session deletes the memories created in it as well. */
    deleteMemories: boolean;
  };
  /** `dev`: no keys, loopback only, one local principal with every role. */
  auth: { mode: 'dev' | 'keys'; keys: ApiKey[] };
  providers: Record<string, ProviderConfig>;
  pricing: Record<string, Price>;
  catalog: { refreshHours: number; strict: boolean; timeoutMs: number };
  /** Capability overrides per "provider/model" (the file's `models` key). */
  models: Record<string, Partial<ModelCapabilities>>;
  agents: Record<string, AgentConfig>;
  /** Missions and schedules as the file ships them (the database may hold edited missions). */
  missions: Record<string, MissionConfig>;
  schedules: Record<string, ScheduleConfig>;
  /** Spending budgets the operator seeds (a tenant's admin may edit them afterwards). */
  budgets: BudgetConfig[];
  /**
   * The shipped agents and missions in the file's shape (defaults applied), as the
   * database keeps definitions (seeded at start; tenants may customize them).
   */
  shipped: {
    agents: Record<string, Record<string, unknown>>;
    missions: Record<string, Record<string, unknown>>;
  };
  tenancy: {
    /** What a tenant's definitions may set (config/tenancy.ts). */
    agentPolicy: AgentPolicy;
    /** Does the wildcard role `*` pass an agent's trigger_roles? */
    wildcardTriggers: boolean;
  };
  tools: {
    maxConcurrency: number;
    maxResultBytes: number;
    /** Tools (names, or `server__*`) whose approvals only a person may answer. */
    humanOnly: string[];
    /** Root of the per-session working directories: `<root>/<tenant>/<session>`. */
    workspaceDir: string;
  };
  skillsDir: string;
  mcpServers: Record<string, McpServerConfig>;
  /** Chat platforms: each belongs to one tenant and one agent. */
  adapters: AdaptersConfig;
  /** Outbound webhooks by name (Standard Webhooks). */
  webhooks: Record<string, WebhookConfig>;
  demo: { delayMs: number };
  /** OpenTelemetry export (docs/deployment.md, "OpenTelemetry"); the operator's alone. */
  telemetry: TelemetryConfig;
  /** The voice catalog: configured voices, the built-in `espeak/en`, OpenAI's voices. */
  voices: VoiceConfig[];
  speech: SpeechConfig;
  a2a: A2aConfig;
  /** Where the configuration came from, for the start-up line. */
  source: string;
}

export const devPrincipal: Principal = {
  tenant: 'default',
  user: 'local',
  roles: ['*'],
  operator: true,
};

/**
 * The agent of that name, if configured. Never a plain `agents[name]`: a name such as
 * `constructor` or `__proto__` must not reach an object's prototype.
 */
export function agentNamed(config: Config, name: string): AgentConfig | undefined {
  return Object.hasOwn(config.agents, name) ? config.agents[name] : undefined;
}
