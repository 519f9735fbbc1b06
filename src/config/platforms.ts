import type { AdaptersFile, WebhooksFile } from './platformSchema.js';
import type { AdaptersConfig, PlatformName, PlatformUser, WebhookConfig } from './platformTypes.js';

/** A configuration mistake, worded for the start-up message. */
export class PlatformConfigError extends Error {}

type Env = Record<string, string | undefined>;

/**
 * Default least time between two edits of a streamed reply, from each platform's
 * documented rate limits: Slack chat.update (Tier 3, ~50/min), Discord (5 edits per 5 s
 * per channel), Google Chat (1 write/s per space), Telegram (about 1/s per chat, 20/min
 * in groups: the SDK's own floor is 1.1 s), Teams (about 1/s per conversation).
 */
const defaultEditIntervalMs: Record<PlatformName, number> = {
  slack: 1000,
  discord: 1200,
  gchat: 1100,
  telegram: 1100,
  teams: 1500,
};

/**
 * Compiles `adapters`: the agent must exist, every named variable must be set (the value
 * is never echoed), and Google Chat needs a way to verify its requests.
 */
export function compileAdapters(
  file: AdaptersFile,
  agents: ReadonlySet<string>,
  defaultAgent: string,
  env: Env,
  leaseTtlMs: number,
): AdaptersConfig {
  const compiled: AdaptersConfig = {};
  // A sender's lease on an outbox row must outlive its call, answered or aborted.
  const longestCallMs = Math.floor((leaseTtlMs * 2) / 3);
  const base = (name: PlatformName, entry: NonNullable<AdaptersFile[PlatformName]>) => {
    const agent = entry.agent ?? defaultAgent;
    if (!agents.has(agent)) {
      throw new PlatformConfigError(`adapters.${name}.agent: no agent named "${agent}"`);
    }
    if (entry.timeout_ms !== undefined && entry.timeout_ms > longestCallMs) {
      throw new PlatformConfigError(
        `adapters.${name}.timeout_ms: at most two thirds of runtime.lease_ttl_ms (${longestCallMs})`,
      );
    }
    const users: Record<string, PlatformUser> = Object.create(null) as Record<string, PlatformUser>;
    for (const [id, user] of Object.entries(entry.users)) users[id] = user;
    return {
      tenant: entry.tenant,
      agent,
      apiUrl: entry.api_url?.replace(/\/+$/, '') ?? null,
      users,
      defaultRoles: entry.default_roles,
      editIntervalMs: entry.edit_interval_ms ?? defaultEditIntervalMs[name],
      retryBaseMs: entry.retry_base_ms,
      maxAttempts: entry.max_attempts,
      timeoutMs: entry.timeout_ms ?? longestCallMs,
      typingTimeoutMs: entry.typing_timeout_ms,
    };
  };
  const required = (name: PlatformName, key: string, variable: string) => {
    if (!env[variable]) {
      throw new PlatformConfigError(`adapters.${name}.${key}: the variable ${variable} is not set`);
    }
    return variable;
  };

  if (file.slack) {
    const entry = file.slack;
    compiled.slack = {
      platform: 'slack',
      ...base('slack', entry),
      signingSecretEnv: required('slack', 'signing_secret_env', entry.signing_secret_env),
      botTokenEnv: required('slack', 'bot_token_env', entry.bot_token_env),
      nativeStreaming: entry.native_streaming,
    };
  }
  if (file.discord) {
    const entry = file.discord;
    compiled.discord = {
      platform: 'discord',
      ...base('discord', entry),
      publicKey: entry.public_key.toLowerCase(),
      applicationId: entry.application_id,
      botTokenEnv: required('discord', 'bot_token_env', entry.bot_token_env),
      gateway: entry.gateway,
    };
  }
  if (file.gchat) {
    const entry = file.gchat;
    if (entry.project_number === undefined && entry.endpoint_url === undefined) {
      throw new PlatformConfigError(
        'adapters.gchat: set project_number or endpoint_url (the audience Google Chat signs its requests for)',
      );
    }
    const variable = required('gchat', 'credentials_env', entry.credentials_env);
    try {
      const parsed = JSON.parse(env[variable] as string) as Record<string, unknown>;
      if (typeof parsed.client_email !== 'string' || typeof parsed.private_key !== 'string') {
        throw new Error('missing keys');
      }
    } catch {
      throw new PlatformConfigError(
        `adapters.gchat.credentials_env: the variable ${variable} must hold a service account's JSON key (client_email, private_key)`,
      );
    }
    compiled.gchat = {
      platform: 'gchat',
      ...base('gchat', entry),
      credentialsEnv: variable,
      projectNumber: entry.project_number ?? null,
      endpointUrl: entry.endpoint_url ?? null,
      jwksUrl: entry.jwks_url ?? null,
      botUserId: entry.bot_user_id ?? null,
    };
  }
  if (file.telegram) {
    const entry = file.telegram;
    compiled.telegram = {
      platform: 'telegram',
      ...base('telegram', entry),
      botTokenEnv: required('telegram', 'bot_token_env', entry.bot_token_env),
      secretTokenEnv: required('telegram', 'secret_token_env', entry.secret_token_env),
    };
  }
  if (file.teams) {
    const entry = file.teams;
    compiled.teams = {
      platform: 'teams',
      ...base('teams', entry),
      appId: entry.app_id,
      appPasswordEnv: required('teams', 'app_password_env', entry.app_password_env),
      appTenantId: entry.app_tenant_id,
      openidUrl: entry.openid_url,
      tokenUrl: entry.token_url,
    };
  }
  return compiled;
}

/**
 * Compiles `webhooks`. The secret must be a Standard Webhooks secret: base64 (after an
 * optional `whsec_` prefix) of 24 to 64 bytes, as receivers' libraries expect it.
 */
export function compileWebhooks(file: WebhooksFile, env: Env): Record<string, WebhookConfig> {
  const compiled = Object.create(null) as Record<string, WebhookConfig>;
  for (const [name, entry] of Object.entries(file)) {
    const value = env[entry.secret_env];
    if (!value) {
      throw new PlatformConfigError(
        `webhooks.${name}.secret_env: the variable ${entry.secret_env} is not set`,
      );
    }
    if (webhookSecretBytes(value) === null) {
      throw new PlatformConfigError(
        `webhooks.${name}.secret_env: the variable ${entry.secret_env} must hold a Standard Webhooks secret (whsec_ followed by base64 of 24 to 64 bytes)`,
      );
    }
    compiled[name] = {
      name,
      url: entry.url,
      tenants: entry.tenants === '*' ? '*' : [...new Set(entry.tenants)],
      events: [...new Set(entry.events)],
      secretEnv: entry.secret_env,
      maxAttempts: entry.max_attempts,
      retryBaseMs: entry.retry_base_ms,
      timeoutMs: entry.timeout_ms,
    };
  }
  return compiled;
}

/** The key bytes of a Standard Webhooks secret, or null when it is not one. */
export function webhookSecretBytes(secret: string): Buffer | null {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return null;
  const bytes = Buffer.from(encoded, 'base64');
  return bytes.length >= 24 && bytes.length <= 64 ? bytes : null;
}
