import type { ProviderConfig } from '../config/types.js';

export type Env = Record<string, string | undefined>;

/** What a provider client needs to authenticate: resolved from the environment, never logged. */
export interface Credentials {
  apiKey: string | undefined;
  headers: Record<string, string>;
}

/**
 * Reads a provider's key and extra headers from the variables its configuration names.
 * Start-up already checked them for every provider an agent uses (config/load.ts); this
 * check is for a provider reached another way (a catalog sync of an unused provider).
 * The error names the variable, never a value.
 */
export function resolveCredentials(provider: ProviderConfig, env: Env): Credentials {
  const read = (variable: string) => {
    const value = env[variable];
    if (!value) {
      throw new Error(
        `provider "${provider.name}" needs the environment variable ${variable}, which is not set`,
      );
    }
    return value;
  };
  const headers: Record<string, string> = {};
  for (const [header, variable] of Object.entries(provider.headersFromEnv)) {
    headers[header] = read(variable);
  }
  return { apiKey: provider.apiKeyEnv ? read(provider.apiKeyEnv) : undefined, headers };
}
