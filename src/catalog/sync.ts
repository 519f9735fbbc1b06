import type { Config, ModelCapabilities, ProviderConfig } from '../config/types.js';
import type { Logger } from '../log.js';
import { resolveCredentials, type Env } from '../providers/credentials.js';
import { knownCapabilities } from '../providers/knownModels.js';
import { fetchModelList, type Fetch, type ListedModel } from '../providers/modelLists.js';
import type { Db } from '../store/db.js';
import { syncModels, type ModelEntry } from '../store/syncModels.js';

/**
 * The model catalog's sync: each provider's own list into the `models` table, with
 * capabilities merged in this order (later wins): the shipped table
 * (providers/knownModels.ts), what the provider reports, the configuration's `models:`
 * overrides. A provider whose list cannot be fetched keeps its previous rows untouched:
 * an outage never marks a whole catalog removed.
 */
export interface SyncReport {
  provider: string;
  ok: boolean;
  /** Why the sync of this provider failed (names the provider and a status, never a body). */
  error: string | null;
  added: string[];
  removed: string[];
  active: number;
}

export interface CatalogDeps {
  db: Db;
  config: Config;
  env?: Env;
  fetch?: Fetch;
  log?: Logger;
}

export async function syncCatalog(
  deps: CatalogDeps,
  providerName: string | null = null,
): Promise<SyncReport[]> {
  const providers = Object.values(deps.config.providers).filter(
    (provider) => providerName === null || provider.name === providerName,
  );
  if (providerName !== null && providers.length === 0) {
    throw new Error(`no provider named "${providerName}"`);
  }
  const reports = await Promise.all(providers.map((provider) => syncProvider(deps, provider)));
  for (const report of reports) {
    if (report.ok) {
      deps.log?.info(
        { provider: report.provider, added: report.added.length, removed: report.removed.length },
        'model catalog synced',
      );
    } else
      deps.log?.warn({ provider: report.provider, err: report.error }, 'model catalog sync failed');
  }
  return reports;
}

async function syncProvider(deps: CatalogDeps, provider: ProviderConfig): Promise<SyncReport> {
  let listed: ListedModel[];
  try {
    const credentials = resolveCredentials(provider, deps.env ?? process.env);
    listed = await fetchModelList(provider, credentials, {
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      signal: AbortSignal.timeout(deps.config.catalog.timeoutMs),
    });
  } catch (error) {
    return {
      provider: provider.name,
      ok: false,
      error: (error as Error).message,
      added: [],
      removed: [],
      active: 0,
    };
  }
  const entries = catalogEntries(deps.config, provider, listed);
  const synced = await syncModels(deps.db, provider, entries);
  return { provider: provider.name, ok: true, error: null, ...synced };
}

/** The listing merged with the shipped table and the overrides, plus override-only models. */
export function catalogEntries(
  config: Config,
  provider: ProviderConfig,
  listed: ListedModel[],
): ModelEntry[] {
  const entries = new Map<string, ModelEntry>();
  const entry = (
    modelId: string,
    displayName: string | null,
    reported: Partial<ModelCapabilities>,
    source: ModelEntry['source'],
  ): ModelEntry => {
    const merged: Partial<ModelCapabilities> = {
      ...knownCapabilities(provider.kind, modelId),
      ...reported,
      ...config.models[`${provider.name}/${modelId}`],
    };
    return {
      modelId,
      displayName,
      tools: merged.tools ?? null,
      vision: merged.vision ?? null,
      reasoning: merged.reasoning ?? null,
      contextWindow: merged.contextWindow ?? null,
      maxOutputTokens: merged.maxOutputTokens ?? null,
      source,
    };
  };
  for (const model of listed) {
    entries.set(model.modelId, entry(model.modelId, model.displayName, model.reported, 'listing'));
  }
  // A server without a model list (some gateways) is described by the configuration alone.
  for (const name of Object.keys(config.models)) {
    const modelId = name.slice(name.indexOf('/') + 1);
    if (name.startsWith(`${provider.name}/`) && !entries.has(modelId)) {
      entries.set(modelId, entry(modelId, null, {}, 'config'));
    }
  }
  return [...entries.values()];
}
