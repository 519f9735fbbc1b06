import { z } from 'zod';

/**
 * The file's `adapters` and `webhooks` keys (CONFIG.md). Secrets are named by
 * environment variable (`*_env`), never written in the file; public values (a Discord
 * public key, an app id) are plain.
 */
const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');
const durationMs = z.number().int().positive();
const httpUrl = z.url({ protocol: /^https?$/ });

/** A platform user → a Parley author and roles (`trigger_roles`, `approver_roles`). */
const userEntry = z
  .object({ user: z.string().min(1).max(128), roles: z.array(z.string()).default([]) })
  .strict();

const common = {
  tenant: z.string().min(1),
  /** The agent every session of this adapter runs; default: the default agent. */
  agent: z.string().min(1).optional(),
  api_url: httpUrl.nullable().default(null),
  users: z.record(z.string().min(1), userEntry).default({}),
  default_roles: z.array(z.string()).default([]),
  /** (added) Least time between two edits of a streamed reply: the platform's rate limit. */
  edit_interval_ms: durationMs.optional(),
  /** (added) A failed post or edit is retried after this, doubling (capped at 5 minutes). */
  retry_base_ms: durationMs.default(1000),
  /** (added) Attempts of one message before it is given up (kept, marked dead). */
  max_attempts: z.number().int().positive().max(100).default(12),
  /**
   * (added) Deadline of one outbound call (a post, an edit, a stream step, a notice): its
   * HTTP request is aborted then. Default and ceiling: two thirds of runtime.lease_ttl_ms.
   */
  timeout_ms: durationMs.optional(),
  /** (added) Deadline of one "typing…" call, which never holds up anything else. */
  typing_timeout_ms: durationMs.default(2000),
};

export const slackSchema = z
  .object({
    ...common,
    signing_secret_env: envName,
    bot_token_env: envName,
    /** (added) Slack's own streaming (chat.startStream); false: post, then throttled edits. */
    native_streaming: z.boolean().default(true),
  })
  .strict();

export const discordSchema = z
  .object({
    ...common,
    /** The application's Ed25519 public key (hex), from the Developer Portal: not a secret. */
    public_key: z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits'),
    application_id: z.string().min(1),
    bot_token_env: envName,
    /** (added) Hold the Gateway connection that brings channel messages (one process at a time). */
    gateway: z.boolean().default(false),
  })
  .strict();

export const gchatSchema = z
  .object({
    ...common,
    /** The service account's JSON key, in this variable. */
    credentials_env: envName,
    /** Audience "project number": Chat signs the request's token itself. */
    project_number: z.string().regex(/^\d+$/, 'must be the numeric project number').optional(),
    /** Audience "HTTP endpoint URL": a Google ID token for this URL. */
    endpoint_url: httpUrl.optional(),
    /** (added) Where the signing keys are published (tests, sovereign clouds). */
    jwks_url: httpUrl.optional(),
    /** (added) The app's own user resource name (`users/123`), to tell its messages apart. */
    bot_user_id: z.string().optional(),
  })
  .strict();

export const telegramSchema = z
  .object({
    ...common,
    bot_token_env: envName,
    secret_token_env: envName,
  })
  .strict();

export const teamsSchema = z
  .object({
    ...common,
    app_id: z.string().min(1),
    app_password_env: envName,
    /** Single-tenant bots: the Entra tenant; null for multi-tenant. */
    app_tenant_id: z.string().min(1).nullable().default(null),
    /** (added) Bot Framework's OpenID configuration (inbound token keys). */
    openid_url: httpUrl.default(
      'https://login.botframework.com/v1/.well-known/openidconfiguration',
    ),
    /** (added) The token endpoint for outbound calls; default Entra's for the tenant. */
    token_url: httpUrl.nullable().default(null),
  })
  .strict();

export const adaptersSchema = z
  .object({
    slack: slackSchema.optional(),
    discord: discordSchema.optional(),
    gchat: gchatSchema.optional(),
    telegram: telegramSchema.optional(),
    teams: teamsSchema.optional(),
  })
  .strict()
  .default({});

/** The journal event types a webhook may select (PROTOCOL.md §3). */
export const webhookEventTypes = [
  'message',
  'turn_started',
  'text_delta',
  'attempt_reset',
  'tool_call',
  'input_required',
  'input_resolved',
  'input_escalated',
  'input_reminder',
  'tool_result',
  'usage',
  'done',
  'cancelled',
  'error',
] as const;

/**
 * Whom an endpoint belongs to: a list of tenants, or `"*"` for every tenant (an endpoint
 * of the operator's). Required: an endpoint receives the replies of the sessions it
 * follows, so which tenants' it follows is never left to a default.
 */
const webhookTenants = z.union(
  [
    z.literal('*'),
    z
      .array(
        z
          .string()
          .min(1)
          .refine((tenant) => tenant !== '*', '"*" stands alone, not in a list'),
      )
      .min(1),
  ],
  { error: 'required, a list of tenants or "*" (every tenant)' },
);

export const webhookSchema = z
  .object({
    url: httpUrl,
    events: z.array(z.enum(webhookEventTypes)).min(1),
    tenants: webhookTenants,
    /** A Standard Webhooks secret (`whsec_` + base64), in this variable. */
    secret_env: envName,
    /** (added) Attempts before a delivery is dead-lettered. */
    max_attempts: z.number().int().positive().max(100).default(8),
    /** (added) Backoff base: doubling, full jitter, capped at 10 minutes. */
    retry_base_ms: durationMs.default(1000),
    /** (added) How long one POST may take. */
    timeout_ms: durationMs.default(10_000),
  })
  .strict();

export const webhooksSchema = z
  .record(
    z
      .string()
      .max(64)
      .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only'),
    webhookSchema,
  )
  .default({});

export type AdaptersFile = z.infer<typeof adaptersSchema>;
export type WebhooksFile = z.infer<typeof webhooksSchema>;
