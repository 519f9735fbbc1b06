import { compileA2a, compileHostRules } from './a2a.js';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { compileAdapters, compileWebhooks, PlatformConfigError } from './platforms.js';
import { fileSchema, type ConfigFile } from './schema.js';
import { checkAgentCredentials, compileAgent } from './agents.js';
import { ConfigError } from './errors.js';
import { compileMissions, compileSchedules } from './missions.js';
import { compileAgentPolicy } from './tenancy.js';
import { compileToolSettings, ToolConfigError } from './tools.js';
import { compileSpeech, compileVoices, defaultSpeechModel, speechModelKinds } from './voices.js';
import type {
  AgentConfig,
  ApiKey,
  Config,
  ModelCapabilities,
  Price,
  ProviderConfig,
  VoiceConfig,
} from './types.js';

export { ConfigError };

type Env = Record<string, string | undefined>;

/**
 * Finds, parses, validates and compiles the configuration, once. Order: `--config PATH`,
 * `PARLEY_CONFIG`, `./parley.yaml`, else built-in defaults. Environment variables then
 * override the keys CONFIG.md lists. Errors name the key and never echo a value.
 */
export function loadConfig(
  options: { path?: string | undefined; env?: Env; cwd?: string } = {},
): Config {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const path =
    options.path ??
    env.PARLEY_CONFIG ??
    (existsSync(`${cwd}/parley.yaml`) ? `${cwd}/parley.yaml` : null);
  let raw: unknown = {};
  if (path) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      throw new ConfigError(`cannot read configuration file ${path}`);
    }
    try {
      raw = parseYaml(text) ?? {};
    } catch (error) {
      const where = (error as { linePos?: { line: number }[] }).linePos?.[0]?.line;
      throw new ConfigError(`${path}: not valid YAML or JSON${where ? ` (line ${where})` : ''}`);
    }
  }
  return compileConfig(raw, env, path ?? 'built-in defaults');
}

export function compileConfig(raw: unknown, env: Env = {}, source = 'inline'): Config {
  const parsed = fileSchema.safeParse(applyEnv(raw, env));
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error.issues, source));
  const file = parsed.data;
  const providers = compileProviders(file);
  const voices = compileVoices(file, providers);
  const speech = compileSpeech(file, voices);
  const agents = compileAgents(file, providers, voices);
  checkCredentials(agents, providers, env);
  const missions = compileMissions(file, agents);
  const schedules = compileSchedules(file, missions);
  const keys = compileKeys(file, env);
  const runtime = file.runtime;
  const heartbeatMs = runtime.heartbeat_ms ?? Math.max(1, Math.floor(runtime.lease_ttl_ms / 3));
  if (heartbeatMs >= runtime.lease_ttl_ms) {
    throw new ConfigError(`${source}: runtime.heartbeat_ms must be below runtime.lease_ttl_ms`);
  }
  let metricsKeySha256: string | null = null;
  if (file.server.metrics_key_env !== null) {
    const value = env[file.server.metrics_key_env];
    if (!value) {
      throw new ConfigError(
        `server.metrics_key_env: the variable ${file.server.metrics_key_env} is not set`,
      );
    }
    metricsKeySha256 = createHash('sha256').update(value).digest('hex');
  }
  let platforms: Pick<Config, 'adapters' | 'webhooks'>;
  try {
    platforms = {
      adapters: compileAdapters(
        file.adapters,
        new Set(Object.keys(agents)),
        defaultAgentOf(agents),
        env,
        runtime.lease_ttl_ms,
      ),
      webhooks: compileWebhooks(file.webhooks, env),
    };
  } catch (error) {
    if (error instanceof PlatformConfigError) throw new ConfigError(error.message);
    throw error;
  }
  let toolSettings: ReturnType<typeof compileToolSettings>;
  try {
    toolSettings = compileToolSettings(file);
  } catch (error) {
    if (error instanceof ToolConfigError) throw new ConfigError(error.message);
    throw error;
  }
  const demoDelay = env.PARLEY_DEMO_DELAY_MS === undefined ? 20 : Number(env.PARLEY_DEMO_DELAY_MS);
  if (!Number.isInteger(demoDelay) || demoDelay < 0) {
    throw new ConfigError('PARLEY_DEMO_DELAY_MS must be a whole number of milliseconds');
  }
  return {
    server: {
      host: file.server.host,
      port: file.server.port,
      keepaliveMs: file.server.keepalive_ms,
      userStreamOverlapMs: file.server.user_stream_overlap_ms,
      blockingWaitMs: file.server.blocking_wait_ms,
      bodyLimitBytes: file.server.body_limit_bytes,
      maxMessageBytes: file.server.max_message_bytes,
      requestTimeoutMs: file.server.request_timeout_ms,
      metricsKeySha256,
    },
    limits: {
      streamsPerPrincipal: file.limits.streams_per_principal,
      streamBufferBytes: file.limits.stream_buffer_bytes,
      attachmentBytes: file.limits.attachment_bytes,
      missionIterations: file.limits.mission_iterations,
      remoteImages: {
        allowHosts: compileHostRules(
          file.limits.remote_images.allow_hosts,
          'limits.remote_images.allow_hosts',
        ),
        allowPrivate: file.limits.remote_images.allow_private,
        timeoutMs: file.limits.remote_images.timeout_ms,
      },
    },
    storage: {
      dataDir: file.storage.data_dir,
      url: file.storage.url,
      poolSize: file.storage.pool_size,
      embeddedSharedBuffersMb: file.storage.embedded_shared_buffers_mb,
      embeddedVacuumIntervalMs: file.storage.embedded_vacuum_interval_ms,
    },
    database: {
      statementTimeoutMs: file.database.statement_timeout_ms,
      idleInTransactionTimeoutMs: file.database.idle_in_transaction_timeout_ms,
      connectTimeoutMs: file.database.connect_timeout_ms,
      preparedStatements: file.database.prepared_statements,
      listenUrl: file.database.listen_url,
      poolIdleMs: file.database.pool_idle_ms,
    },
    runtime: {
      leaseTtlMs: runtime.lease_ttl_ms,
      heartbeatMs,
      maxParallelTurns: runtime.max_parallel_turns,
      parkAfterAttempts: runtime.park_after_attempts,
      parkQueued: runtime.park_queued,
      pollMs: runtime.poll_ms,
      retryAttempts: runtime.retry_attempts,
      retryBaseMs: runtime.retry_base_ms,
      historyMessages: runtime.history_messages,
      shutdownGraceMs: runtime.shutdown_grace_ms,
      deltaBatchMs: runtime.delta_batch_ms,
      deltaBatchBytes: runtime.delta_batch_bytes,
      maxParallelExecutions: runtime.max_parallel_executions,
      executionRecheckMs: runtime.execution_recheck_ms,
      evaluationTimeoutMs: runtime.evaluation_timeout_ms,
      scheduleGraceMs: runtime.schedule_grace_ms,
      maxCatchUpFires: runtime.max_catch_up_fires,
    },
    watchdog: { stallMs: file.watchdog.stall_ms, retries: file.watchdog.retries },
    retention: {
      keepEventsDays: file.retention.keep_events_days,
      keepDeliveriesDays:
        file.retention.keep_deliveries_days === undefined
          ? file.retention.keep_events_days
          : file.retention.keep_deliveries_days,
      keepSessionsDays: file.retention.keep_sessions_days,
      keepUsageDays: file.retention.keep_usage_days,
      pruneIntervalMs: file.retention.prune_interval_ms,
      pruneBatchSize: file.retention.prune_batch_size,
      deleteMemories: file.retention.delete_memories,
    },
    auth: { mode: keys.length === 0 ? 'dev' : 'keys', keys },
    providers: nullPrototype(providers),
    pricing: nullPrototype(compilePricing(file)),
    catalog: {
      refreshHours: file.catalog.refresh_hours,
      strict: file.catalog.strict,
      timeoutMs: file.catalog.timeout_ms,
    },
    models: compileModelOverrides(file, providers),
    agents: nullPrototype(agents),
    missions: nullPrototype(missions),
    schedules: nullPrototype(schedules),
    budgets: Object.entries(file.budgets).map(([budgetId, budget]) => ({
      tenant: budget.tenant,
      budgetId,
      scope: budget.scope,
      scopeId: budget.scope_id,
      metric: budget.metric,
      period: budget.period,
      limit: budget.limit,
    })),
    shipped: { agents: nullPrototype(file.agents), missions: nullPrototype(file.missions) },
    tenancy: {
      agentPolicy: compileAgentPolicy(file),
      wildcardTriggers: file.tenancy.wildcard_triggers,
    },
    ...toolSettings,
    ...platforms,
    demo: { delayMs: demoDelay },
    telemetry: compileTelemetry(file, env),
    voices,
    speech,
    a2a: compileA2a(file.a2a),
    source,
  };
}

/** Environment overrides (CONFIG.md) are applied before validation so they are checked too. */
function applyEnv(raw: unknown, env: Env): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError('the configuration must be a mapping of keys');
  }
  const file = structuredClone(raw) as Record<string, Record<string, unknown> | undefined>;
  const set = (section: string, key: string, value: unknown) => {
    file[section] = { ...(file[section] ?? {}), [key]: value };
  };
  const integer = (name: string, value: string) => {
    const number = Number(value);
    if (!/^\d+$/.test(value)) throw new ConfigError(`${name} must be a whole number`);
    return number;
  };
  if (env.PARLEY_HOST) set('server', 'host', env.PARLEY_HOST);
  if (env.PARLEY_PORT) set('server', 'port', integer('PARLEY_PORT', env.PARLEY_PORT));
  if (env.PARLEY_DATA_DIR) set('storage', 'data_dir', env.PARLEY_DATA_DIR);
  if (env.DATABASE_URL) set('storage', 'url', env.DATABASE_URL);
  if (env.PARLEY_EMBEDDED_SHARED_BUFFERS_MB) {
    const name = 'PARLEY_EMBEDDED_SHARED_BUFFERS_MB';
    set('storage', 'embedded_shared_buffers_mb', integer(name, env[name] ?? ''));
  }
  if (env.PARLEY_LEASE_TTL_MS) {
    set('runtime', 'lease_ttl_ms', integer('PARLEY_LEASE_TTL_MS', env.PARLEY_LEASE_TTL_MS));
  }
  if (env.PARLEY_HEARTBEAT_MS) {
    set('runtime', 'heartbeat_ms', integer('PARLEY_HEARTBEAT_MS', env.PARLEY_HEARTBEAT_MS));
  }
  return file;
}

/**
 * `otlp_endpoint` is the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is: traces go
 * to its `/v1/traces` (an endpoint that already ends so is taken as it is).
 */
function compileTelemetry(file: ConfigFile, env: Env): Config['telemetry'] {
  const telemetry = file.telemetry;
  for (const [header, variable] of Object.entries(telemetry.otlp_headers_from_env)) {
    if (!env[variable]) {
      throw new ConfigError(
        `telemetry.otlp_headers_from_env.${header}: the variable ${variable} is not set`,
      );
    }
  }
  const endpoint = telemetry.otlp_endpoint?.replace(/\/+$/, '') ?? null;
  return {
    tracesUrl:
      endpoint === null
        ? null
        : endpoint.endsWith('/v1/traces')
          ? endpoint
          : `${endpoint}/v1/traces`,
    protocol: telemetry.otlp_protocol,
    headersFromEnv: telemetry.otlp_headers_from_env,
    captureContent: telemetry.capture_content,
    serviceName: telemetry.service_name,
  };
}

function describeIssues(issues: z.core.$ZodIssue[], source: string): string {
  const lines = issues.slice(0, 10).map((issue) => {
    const key = issue.path.map(String).join('.') || '(root)';
    return `  ${key}: ${issue.message}`;
  });
  return `invalid configuration (${source}):\n${lines.join('\n')}`;
}

function compileProviders(file: ConfigFile): Record<string, ProviderConfig> {
  const providers: Record<string, ProviderConfig> = {};
  for (const [name, provider] of Object.entries(file.providers)) {
    if (provider.api !== undefined && provider.kind !== 'openai') {
      throw new ConfigError(`providers.${name}.api: only an openai provider has an api choice`);
    }
    if (provider.speech_model !== undefined && !speechModelKinds.has(provider.kind)) {
      throw new ConfigError(
        `providers.${name}.speech_model: only an openai or elevenlabs provider has a speech model`,
      );
    }
    if (
      !provider.base_url &&
      (provider.kind === 'openai_compatible' ||
        provider.kind === 'ollama' ||
        provider.kind === 'piper')
    ) {
      throw new ConfigError(`providers.${name}.base_url: required for kind ${provider.kind}`);
    }
    if (provider.api_key_env && (provider.kind === 'demo' || provider.kind === 'espeak')) {
      throw new ConfigError(
        `providers.${name}.api_key_env: the ${provider.kind} provider takes no key`,
      );
    }
    if (provider.base_url && provider.kind === 'espeak') {
      throw new ConfigError(
        `providers.${name}.base_url: espeak runs espeak-ng on this machine, it has no URL`,
      );
    }
    if (
      !provider.api_key_env &&
      ['openai', 'anthropic', 'google', 'fal', 'elevenlabs'].includes(provider.kind)
    ) {
      throw new ConfigError(`providers.${name}.api_key_env: required for kind ${provider.kind}`);
    }
    providers[name] = {
      name,
      kind: provider.kind,
      apiKeyEnv: provider.api_key_env ?? null,
      baseUrl: provider.base_url?.replace(/\/+$/, '') ?? null,
      headersFromEnv: provider.headers_from_env,
      api: provider.api ?? 'responses',
      speechModel: provider.speech_model ?? defaultSpeechModel(provider.kind),
      firstTokenTimeoutMs: provider.first_token_timeout_ms,
      idleTimeoutMs: provider.idle_timeout_ms,
      circuit: { failures: provider.circuit.failures, openMs: provider.circuit.open_ms },
    };
  }
  return providers;
}

function checkCredentials(
  agents: Record<string, AgentConfig>,
  providers: Record<string, ProviderConfig>,
  env: Env,
): void {
  for (const agent of Object.values(agents)) checkAgentCredentials(agent, providers, env);
}

function compilePricing(file: ConfigFile): Record<string, Price> {
  const pricing: Record<string, Price> = {};
  for (const [model, price] of Object.entries(file.pricing)) {
    pricing[model] = {
      input: price.input,
      output: price.output,
      cachedInput: price.cached_input ?? price.input,
      ...(price.per_image === undefined ? {} : { perImage: price.per_image }),
      ...(price.per_minute === undefined ? {} : { perMinute: price.per_minute }),
    };
  }
  return pricing;
}

function compileModelOverrides(
  file: ConfigFile,
  providers: Record<string, ProviderConfig>,
): Record<string, Partial<ModelCapabilities>> {
  const overrides: Record<string, Partial<ModelCapabilities>> = {};
  for (const [model, override] of Object.entries(file.models)) {
    const provider = model.slice(0, model.indexOf('/'));
    if (!providers[provider]) {
      throw new ConfigError(`models.${model}: no provider named "${provider}" in providers`);
    }
    const compiled: Partial<ModelCapabilities> = {};
    if (override.tools !== undefined) compiled.tools = override.tools;
    if (override.vision !== undefined) compiled.vision = override.vision;
    if (override.reasoning !== undefined) compiled.reasoning = override.reasoning;
    if (override.context_window !== undefined) compiled.contextWindow = override.context_window;
    if (override.max_output_tokens !== undefined) {
      compiled.maxOutputTokens = override.max_output_tokens;
    }
    overrides[model] = compiled;
  }
  return overrides;
}

function compileAgents(
  file: ConfigFile,
  providers: Record<string, ProviderConfig>,
  voices: readonly VoiceConfig[],
) {
  const agents: Record<string, AgentConfig> = {};
  for (const [name, agent] of Object.entries(file.agents)) {
    agents[name] = compileAgent(name, agent, { providers, mcpServers: file.mcp_servers, voices });
  }
  if (!agents.default && Object.keys(agents).length === 0) {
    throw new ConfigError('agents: at least one agent is required');
  }
  return agents;
}

function compileKeys(file: ConfigFile, env: Env): ApiKey[] {
  return file.auth.keys.map((key, index) => {
    const where = `auth.keys.${index}`;
    if ((key.key_env === undefined) === (key.key_sha256 === undefined)) {
      throw new ConfigError(`${where}: set exactly one of key_env or key_sha256`);
    }
    let sha256 = key.key_sha256;
    if (key.key_env !== undefined) {
      const value = env[key.key_env];
      if (!value) throw new ConfigError(`${where}.key_env: the variable ${key.key_env} is not set`);
      sha256 = createHash('sha256').update(value).digest('hex');
    }
    return {
      sha256: sha256 as string,
      principal: { tenant: key.tenant, user: key.user, roles: key.roles, operator: key.operator },
    };
  });
}

/**
 * Maps keyed by names users choose have no prototype: `agents["constructor"]` is
 * undefined, not Object's constructor. (Lookups use `Object.hasOwn` as well.)
 */
export function nullPrototype<T>(record: Record<string, T>): Record<string, T> {
  return Object.assign(Object.create(null) as Record<string, T>, record);
}

/** The agent a request names, or the default one (the first agent when none is called `default`). */
export function defaultAgentName(config: Config): string {
  return defaultAgentOf(config.agents);
}

function defaultAgentOf(agents: Record<string, AgentConfig>): string {
  return agents.default ? 'default' : (Object.keys(agents)[0] as string);
}
