import { ParleyClient } from 'parley/client';

/**
 * The API key lives in this tab's session storage: it survives a reload, is gone when the
 * tab closes, and is only ever sent as a bearer header (never in a URL).
 */
const keyName = 'parley.apiKey';

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(keyName);
  } catch {
    return null;
  }
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(keyName);
  else sessionStorage.setItem(keyName, key);
}

/** The app talks to the server that served it. */
export function makeClient(apiKey: string | null): ParleyClient {
  return new ParleyClient({ baseUrl: window.location.origin, apiKey: apiKey ?? undefined });
}
