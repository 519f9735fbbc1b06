import type { Db } from '../store/db.js';
import { listModels } from '../store/listModels.js';

/** What prompt assembly needs to know of a model (from the catalog; null = unknown). */
export interface ModelInfo {
  contextWindow: number | null;
  maxOutputTokens: number | null;
  vision: boolean | null;
}

export type ModelInfoLookup = (provider: string, modelId: string) => ModelInfo | null;

/**
 * The catalog as the worker reads it on every turn: kept in memory, refreshed from the
 * `models` table every `refreshMs` (a sync elsewhere shows up within that), so a turn
 * costs no catalog query. Unknown models are `null`: prompt assembly then assumes a
 * modest window and no vision.
 */
export function startModelInfo(
  db: Db,
  options: { refreshMs: number; onError?: (error: unknown) => void },
): { lookup: ModelInfoLookup; refresh: () => Promise<void>; stop: () => void } {
  let known = new Map<string, ModelInfo>();
  const refresh = async () => {
    try {
      const models = await listModels(db);
      known = new Map(
        models.map((model) => [
          `${model.provider}/${model.model_id}`,
          {
            contextWindow: model.context_window,
            maxOutputTokens: model.max_output_tokens,
            vision: model.vision,
          },
        ]),
      );
    } catch (error) {
      options.onError?.(error);
    }
  };
  const timer = setInterval(() => void refresh(), options.refreshMs);
  timer.unref();
  return {
    lookup: (provider, modelId) => known.get(`${provider}/${modelId}`) ?? null,
    refresh,
    stop: () => clearInterval(timer),
  };
}
