import { z } from 'zod';
import { adaptersSchema, webhooksSchema } from './platformSchema.js';
import { agentSchema, toolEntrySchema } from './agentSchema.js';
import { missionName, missionSchema, scheduleName, scheduleSchema } from './missionSchema.js';
import { speechSchema, voiceSchema } from './speechSchema.js';
import { a2aSchema } from './a2a.js';
import {
  callTimeoutMs,
  durationMs,
  envName,
  maxBudgetIterations,
  maxBudgetToolCalls,
  maxMissionIterations,
  maxMissionSeconds,
  maxOutputTokensCeiling,
  maxTimerMs,
  modelName,
} from './schemaUnits.js';

/**
 * The configuration file's shape (CONFIG.md). Keys are snake_case as users write them;
 * `compileConfig` turns the parsed file into the typed object the rest of Parley uses.
 * Unknown keys are errors: a typo must fail at start, not silently fall back to a default.
 */

export { agentSchema, namespaceName, toolEntrySchema } from './agentSchema.js';
export {
  interruptTo,
  missionName,
  missionSchema,
  priorityName,
  scheduleSchema,
} from './missionSchema.js';
export { speechSchema, voiceId, voiceSchema } from './speechSchema.js';
export {
  maxBudgetIterations,
  maxBudgetToolCalls,
  maxCallTimeoutMs,
  maxMissionIterations,
  maxMissionSeconds,
  maxOutputTokensCeiling,
  maxTimerMs,
} from './schemaUnits.js';

/** Server names end up in tool names (`server__tool`): provider-safe, no `__` inside. */
const mcpServerName = z
  .string()
  .max(40)
  .regex(/^[a-zA-Z0-9-]+(_[a-zA-Z0-9-]+)*$/, 'letters, digits, - and single _ only');
const mcpTimeouts = {
  connect_timeout_ms: callTimeoutMs.default(10000),
  call_timeout_ms: callTimeoutMs.default(30000),
};
/**
 * Which tenants' own definitions may list a server's tools: names, or "*" for every
 * tenant. Default none: only the operator's file agents (and a tenant's copy of one that
 * keeps their entries exactly) may.
 */
const mcpTenants = z.union([z.literal('*'), z.array(z.string().min(1))]).default([]);
export const mcpServerSchema = z.union([
  z
    .object({
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      env_from: z.array(z.string()).default([]),
      cwd: z.string().nullable().default(null),
      tenants: mcpTenants,
      ...mcpTimeouts,
    })
    .strict(),
  z
    .object({
      url: z.url({ protocol: /^https?$/ }),
      headers_from_env: z.record(z.string(), z.string()).default({}),
      tenants: mcpTenants,
      ...mcpTimeouts,
    })
    .strict(),
]);

export const providerSchema = z
  .object({
    // espeak, piper and elevenlabs speak (voices:), they have no language models.
    kind: z.enum([
      'demo',
      'openai',
      'openai_compatible',
      'anthropic',
      'google',
      'ollama',
      'espeak',
      'piper',
      'elevenlabs',
      // fal makes images only (the generate_image tool's model), no language models.
      'fal',
    ]),
    api_key_env: envName.optional(),
    base_url: z.url({ protocol: /^https?$/ }).optional(),
    // Extra request headers, each value read from the named variable (header → variable).
    headers_from_env: z.record(z.string().regex(/^[A-Za-z0-9-]+$/), envName).default({}),
    // openai only: the Responses API (default) or Chat Completions.
    api: z.enum(['responses', 'chat']).optional(),
    // openai and elevenlabs: the model their voices speak with (`voices:`; docs/PROTOCOL.md).
    speech_model: z.string().min(1).max(128).optional(),
    // Deadlines of one streaming call (providers.md, "Timeouts"); 0 turns one off.
    first_token_timeout_ms: z.number().int().nonnegative().default(60_000),
    idle_timeout_ms: z.number().int().nonnegative().default(30_000),
    // The provider's circuit (providers.md, "Circuit protection"); failures 0: never opens.
    circuit: z
      .object({
        failures: z.number().int().nonnegative().default(0),
        open_ms: z.number().int().positive().default(30_000),
      })
      .strict()
      .prefault({}),
  })
  .strict();

/** Capabilities of one model, as the catalog stores them (every key optional). */
export const modelOverrideSchema = z
  .object({
    tools: z.boolean().optional(),
    vision: z.boolean().optional(),
    reasoning: z.boolean().optional(),
    context_window: z.number().int().positive().optional(),
    max_output_tokens: z.number().int().positive().optional(),
  })
  .strict();

export const keySchema = z
  .object({
    key_env: z.string().optional(),
    key_sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits')
      .optional(),
    tenant: z.string().min(1),
    user: z.string().min(1),
    roles: z.array(z.string()).default([]),
    // The deployment operator's key: deployment-wide actions (model catalog sync, prune,
    // metrics). Roles still decide what it may do inside its tenant.
    operator: z.boolean().default(false),
  })
  .strict();

/**
 * What a tenant admin's PUT of an agent or a mission may set (config/tenancy.ts). The
 * ceilings bound a tenant's numbers; a value its operator's definition of the same name
 * already has is always allowed.
 */
export const agentPolicySchema = z
  .object({
    tools: z
      .array(z.string().min(1))
      .default([
        'clock',
        'calculator',
        'http_fetch',
        'remember',
        'recall',
        'forget',
        'load_skill',
        'ask_user',
      ]),
    max_timeout_ms: callTimeoutMs.default(120_000),
    max_bytes: z.number().int().positive().max(104_857_600).default(1_048_576),
    max_output_bytes: z.number().int().min(1024).max(67_108_864).default(1_048_576),
    max_redirects: z.number().int().min(0).max(20).default(10),
    max_iterations: z.number().int().positive().max(maxBudgetIterations).default(32),
    max_tool_calls: z.number().int().nonnegative().max(maxBudgetToolCalls).default(64),
    max_output_tokens: z.number().int().positive().max(maxOutputTokensCeiling).default(32_768),
    max_mission_iterations: z.number().int().positive().max(maxMissionIterations).default(100),
    max_mission_timeout_seconds: z.number().positive().max(maxMissionSeconds).default(86_400),
    max_loop_delay_seconds: z.number().nonnegative().max(maxMissionSeconds).default(86_400),
  })
  .strict();

/** A budget's id: in the configuration and in `/api/v1/budgets/{id}`. */
export const budgetId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - (at most 64)');
/** The largest limit a budget may have (what its column holds). */
export const maxBudgetLimit = 1e11;

/** A spending budget the operator seeds for a tenant (docs/governance.md). */
export const budgetSchema = z
  .object({
    tenant: z.string().min(1),
    scope: z.enum(['tenant', 'user', 'agent', 'session', 'execution']).default('tenant'),
    // The user, agent, session or execution; absent for the whole tenant.
    scope_id: z.string().min(1).max(256).nullable().default(null),
    metric: z.enum(['cost_usd', 'tokens', 'tool_calls', 'wall_ms']),
    period: z.enum(['day', 'month', 'run']),
    limit: z.number().nonnegative().max(maxBudgetLimit),
  })
  .strict()
  .refine((budget) => (budget.scope === 'tenant') === (budget.scope_id === null), {
    message:
      'scope_id: required for a user, agent, session or execution budget, absent for a tenant one',
    path: ['scope_id'],
  });

/**
 * OpenTelemetry spans exported over OTLP/HTTP (docs/deployment.md, "OpenTelemetry"). The
 * operator's alone: a tenant's definitions are agents and missions, whose schemas have no
 * such key. No endpoint: no exporter, no span, nothing on a turn's path.
 */
export const telemetrySchema = z
  .object({
    otlp_endpoint: z
      .url({ protocol: /^https?$/ })
      .nullable()
      .default(null),
    otlp_protocol: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
    // Request headers of the export (an API key, a tenant header), each value read from
    // the named variable (header → variable), never written in the file.
    otlp_headers_from_env: z.record(z.string().regex(/^[A-Za-z0-9-]+$/), envName).default({}),
    capture_content: z.boolean().default(false),
    service_name: z.string().min(1).max(256).default('parley'),
  })
  .strict()
  .prefault({});

export const fileSchema = z
  .object({
    server: z
      .object({
        host: z.string().default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(8080),
        keepalive_ms: durationMs.default(15000),
        // How far back each read of a user stream (GET /api/v1/me/events) looks past the
        // last one: longer than any transaction that journals events takes to commit.
        user_stream_overlap_ms: durationMs.default(10000),
        // How long a blocking request of a protocol adapter (OpenAI `responses.create`
        // without stream or background) waits for its turn before answering it as it stands.
        blocking_wait_ms: durationMs.default(600_000),
        body_limit_bytes: z
          .number()
          .int()
          .positive()
          .default(64 * 1024),
        max_message_bytes: z
          .number()
          .int()
          .positive()
          .default(32 * 1024),
        request_timeout_ms: durationMs.default(30_000),
        metrics_key_env: z.string().nullable().default(null),
      })
      .strict()
      .prefault({}),
    storage: z
      .object({
        data_dir: z.string().default('./.parley'),
        url: z.string().nullable().default(null),
        pool_size: z.number().int().positive().default(10),
        // PGlite's page cache (its shared_buffers). Its start-up zeroes all of it, so a
        // smaller one opens faster; the test suite opens hundreds.
        embedded_shared_buffers_mb: z.number().int().min(1).max(1024).default(128),
        // PGlite has no autovacuum: how often the embedded engine vacuums (0: never).
        embedded_vacuum_interval_ms: z.number().int().min(0).default(60_000),
      })
      .strict()
      .prefault({}),
    // PostgreSQL deadlines (docs/reliability.md, "Deadlines"); 0 turns one off. PGlite
    // ignores them: one process, nothing to wait for but itself.
    database: z
      .object({
        statement_timeout_ms: z.number().int().nonnegative().default(30_000),
        idle_in_transaction_timeout_ms: z.number().int().nonnegative().default(60_000),
        connect_timeout_ms: z.number().int().nonnegative().default(10_000),
        prepared_statements: z.boolean().default(true),
        listen_url: z.string().nullable().default(null),
        pool_idle_ms: z.number().int().nonnegative().default(300_000),
      })
      .strict()
      .prefault({}),
    runtime: z
      .object({
        lease_ttl_ms: durationMs.default(15000),
        // Default: a third of the lease ttl (compileConfig), so setting the ttl alone works.
        heartbeat_ms: durationMs.optional(),
        max_parallel_turns: z.number().int().positive().default(8),
        park_after_attempts: z.number().int().positive().default(5),
        // Parking fails the attempted turns; `hold` keeps the queued ones for the unpark.
        park_queued: z.enum(['hold', 'fail']).default('hold'),
        poll_ms: durationMs.default(2000),
        retry_attempts: z.number().int().positive().default(4),
        retry_base_ms: durationMs.default(500),
        history_messages: z.number().int().nonnegative().default(500),
        shutdown_grace_ms: durationMs.default(10000),
        delta_batch_ms: durationMs.default(50),
        delta_batch_bytes: z.number().int().positive().default(4096),
        // Executions: how many one worker advances at once, how often one that
        // waits for its turn is re-checked when no wake-up says it ended, and how long an
        // evaluation may take.
        max_parallel_executions: z.number().int().positive().default(8),
        execution_recheck_ms: durationMs.default(5000),
        evaluation_timeout_ms: durationMs.default(60_000),
        // Schedules: a fire time later than this is "missed" (catch_up decides), and at most
        // this many missed fire times are started at once with catch_up: all.
        schedule_grace_ms: durationMs.default(60_000),
        max_catch_up_fires: z.number().int().positive().default(100),
      })
      .strict()
      .prefault({}),
    // The progress watchdog (docs/governance.md, "Progress watchdog"): a turn step that
    // makes no progress for stall_ms is aborted and retried, `retries` times per turn, then
    // the turn ends with error `stalled`. Deployment-wide; 0 turns it off.
    watchdog: z
      .object({
        stall_ms: z.number().int().nonnegative().max(maxTimerMs).default(120_000),
        retries: z.number().int().nonnegative().max(100).default(1),
      })
      .strict()
      .prefault({}),
    retention: z
      .object({
        keep_events_days: z.number().positive().nullable().default(null),
        // Absent: as keep_events_days (they are copies of journal events); null: forever.
        keep_deliveries_days: z.number().positive().nullable().optional(),
        keep_sessions_days: z.number().positive().nullable().default(null),
        keep_usage_days: z.number().positive().nullable().default(null),
        prune_interval_ms: durationMs.default(60 * 60 * 1000),
        prune_batch_size: z.number().int().positive().max(100_000).default(1000),
        // Deleting a session also deletes the memories its turns created.
        delete_memories: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    limits: z
      .object({
        streams_per_principal: z.number().int().positive().default(100),
        /** Unflushed SSE bytes past which a connection that does not read is closed. */
        stream_buffer_bytes: z
          .number()
          .int()
          .positive()
          .default(1024 * 1024),
        attachment_bytes: z
          .number()
          .int()
          .positive()
          .default(10 * 1024 * 1024),
        // The hard cap on a mission's max_iterations (config and API).
        mission_iterations: z.number().int().positive().max(maxMissionIterations).default(100),
        // Images the OpenAI-compatible API fetches by URL (input_image image_url): from
        // these hosts only (http_fetch's allow_hosts syntax); none: a URL is refused.
        remote_images: z
          .object({
            allow_hosts: z.array(z.string()).default([]),
            allow_private: z.boolean().default(false),
            timeout_ms: z.number().int().positive().max(120_000).default(10_000),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    auth: z
      .object({ keys: z.array(keySchema).default([]) })
      .strict()
      .prefault({}),
    providers: z.record(z.string(), providerSchema).default({
      demo: {
        kind: 'demo',
        headers_from_env: {},
        first_token_timeout_ms: 60_000,
        idle_timeout_ms: 30_000,
        circuit: { failures: 0, open_ms: 30_000 },
      },
    }),
    pricing: z
      .record(
        z.string(),
        z
          .object({
            input: z.number().nonnegative(),
            output: z.number().nonnegative(),
            // Cached (prompt-cache read) input tokens; defaults to the input price.
            cached_input: z.number().nonnegative().optional(),
            // Image models: USD per generated image, on top of any tokens they report.
            per_image: z.number().nonnegative().optional(),
            // Transcription models: USD per minute of audio heard.
            per_minute: z.number().nonnegative().optional(),
          })
          .strict(),
      )
      .default({}),
    catalog: z
      .object({
        refresh_hours: z.number().positive().default(24),
        strict: z.boolean().default(false),
        // How long one provider's model listing may take before the sync gives up on it.
        timeout_ms: durationMs.default(15_000),
      })
      .strict()
      .prefault({}),
    // Capability overrides per "provider/model", applied over the provider's listing and
    // the shipped table (src/providers/knownModels.ts).
    models: z.record(modelName, modelOverrideSchema).default({}),
    agents: z.record(z.string(), agentSchema).default({ default: agentSchema.parse({}) }),
    tenancy: z
      .object({
        agent_policy: agentPolicySchema.prefault({}),
        // A principal with the wildcard role `*` triggers turns of agents with
        // trigger_roles only when this is set.
        wildcard_triggers: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    tools: z
      .object({
        max_concurrency: z.number().int().positive().default(4),
        max_result_bytes: z.number().int().min(1024).default(65536),
        workspace_dir: z.string().nullable().default(null),
        // Tools whose approvals only a person may answer, for every agent (an agent's entry
        // may add `human_only: true`; nothing removes these).
        human_only: z.array(z.string().min(1)).default(['shell', 'http_fetch']),
      })
      .strict()
      .prefault({}),
    skills_dir: z.string().default('./skills'),
    mcp_servers: z.record(mcpServerName, mcpServerSchema).default({}),
    adapters: adaptersSchema,
    webhooks: webhooksSchema,
    missions: z.record(missionName, missionSchema).default({}),
    schedules: z.record(scheduleName, scheduleSchema).default({}),
    budgets: z.record(budgetId, budgetSchema).default({}),
    telemetry: telemetrySchema,
    voices: z.array(voiceSchema).max(1000).default([]),
    speech: speechSchema,
    a2a: a2aSchema,
  })
  .strict();

export type ConfigFile = z.infer<typeof fileSchema>;
export type AgentFile = z.infer<typeof agentSchema>;
export type ToolEntryFile = z.infer<typeof toolEntrySchema>;
export type AgentPolicyFile = z.infer<typeof agentPolicySchema>;
export type MissionFile = z.infer<typeof missionSchema>;
export type ScheduleFile = z.infer<typeof scheduleSchema>;
