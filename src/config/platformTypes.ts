/**
 * Compiled `adapters` and `webhooks`. Secrets stay in the environment: the
 * compiled object names the variables, which are checked at start and read when a
 * platform client or a webhook signer is built.
 */
export type PlatformName = 'slack' | 'discord' | 'gchat' | 'telegram' | 'teams';

export const platformNames: readonly PlatformName[] = [
  'slack',
  'discord',
  'gchat',
  'telegram',
  'teams',
];

export interface PlatformUser {
  user: string;
  roles: string[];
}

interface PlatformBase {
  tenant: string;
  agent: string;
  /** Another API base (an enterprise proxy, a test's fake platform); null: the platform's. */
  apiUrl: string | null;
  /** Platform user id → author and roles (a map without prototype). */
  users: Record<string, PlatformUser>;
  /** Roles of a platform user not listed in `users`. */
  defaultRoles: string[];
  /** Least time between two edits of one streamed reply. */
  editIntervalMs: number;
  /** Backoff base of a failed platform call, and how many attempts a message gets. */
  retryBaseMs: number;
  maxAttempts: number;
  /** Deadline of one outbound call (its HTTP request is aborted then). */
  timeoutMs: number;
  /** Deadline of one "typing…" call. */
  typingTimeoutMs: number;
}

export interface SlackConfig extends PlatformBase {
  platform: 'slack';
  signingSecretEnv: string;
  botTokenEnv: string;
  nativeStreaming: boolean;
}

export interface DiscordConfig extends PlatformBase {
  platform: 'discord';
  publicKey: string;
  applicationId: string;
  botTokenEnv: string;
  gateway: boolean;
}

export interface GchatConfig extends PlatformBase {
  platform: 'gchat';
  credentialsEnv: string;
  projectNumber: string | null;
  endpointUrl: string | null;
  jwksUrl: string | null;
  botUserId: string | null;
}

export interface TelegramConfig extends PlatformBase {
  platform: 'telegram';
  botTokenEnv: string;
  secretTokenEnv: string;
}

export interface TeamsConfig extends PlatformBase {
  platform: 'teams';
  appId: string;
  appPasswordEnv: string;
  appTenantId: string | null;
  openidUrl: string;
  tokenUrl: string | null;
}

export type PlatformConfig =
  SlackConfig | DiscordConfig | GchatConfig | TelegramConfig | TeamsConfig;

export interface AdaptersConfig {
  slack?: SlackConfig;
  discord?: DiscordConfig;
  gchat?: GchatConfig;
  telegram?: TelegramConfig;
  teams?: TeamsConfig;
}

export interface WebhookConfig {
  name: string;
  url: string;
  /** The tenants whose sessions' events it receives; `*`: every tenant (the operator's). */
  tenants: readonly string[] | '*';
  /** Journal event types this endpoint receives. */
  events: string[];
  secretEnv: string;
  maxAttempts: number;
  retryBaseMs: number;
  timeoutMs: number;
}

/** The configured adapters, in a fixed order. */
export function configuredPlatforms(adapters: AdaptersConfig): PlatformConfig[] {
  return platformNames.flatMap((name) => {
    const platform = adapters[name];
    return platform ? [platform] : [];
  });
}
