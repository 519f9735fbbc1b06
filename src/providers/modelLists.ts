import type { ModelCapabilities, ProviderConfig } from '../config/types.js';
import type { Credentials } from './credentials.js';
import { chatBaseUrl } from './openaiCompatible.js';
import { demoModelIds } from './knownModels.js';

/** One model as its provider lists it, with whatever capabilities the provider reports. */
export interface ListedModel {
  modelId: string;
  displayName: string | null;
  reported: Partial<ModelCapabilities>;
}

export type Fetch = typeof fetch;

const defaults = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com/v1',
  google: 'https://generativelanguage.googleapis.com/v1beta',
};

/**
 * Fetches a provider's model list over its own API: OpenAI-style `GET /models` (openai,
 * openai_compatible), Anthropic `GET /v1/models`, Gemini `GET /v1beta/models`, Ollama
 * `GET /api/tags` (+ `POST /api/show` per model, which reports capabilities and the
 * context length). Paginated lists are followed. A failure throws an error naming the
 * provider and the HTTP status, never the body.
 */
export async function fetchModelList(
  provider: ProviderConfig,
  credentials: Credentials,
  options: { fetch?: Fetch; signal?: AbortSignal } = {},
): Promise<ListedModel[]> {
  const http = new Http(provider.name, options.fetch ?? fetch, options.signal);
  switch (provider.kind) {
    case 'demo':
      return demoModelIds.map((modelId) => ({ modelId, displayName: null, reported: {} }));
    case 'openai':
    case 'openai_compatible':
      return listOpenAIStyle(http, provider, credentials);
    case 'anthropic':
      return listAnthropic(http, provider, credentials);
    case 'google':
      return listGoogle(http, provider, credentials);
    case 'ollama':
      return listOllama(http, provider, credentials);
    case 'fal':
      // fal's image models are named in configuration; it lists no language models.
      return [];
    case 'espeak':
    case 'piper':
    case 'elevenlabs':
      // Speech providers: their voices are the voice catalog (config/voices.ts).
      return [];
  }
}

class Http {
  constructor(
    private readonly provider: string,
    private readonly fetchImpl: Fetch,
    private readonly signal: AbortSignal | undefined,
  ) {}

  async json<T>(
    url: string,
    init: { method?: string; headers: Record<string, string>; body?: unknown },
  ): Promise<T> {
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        method: init.method ?? 'GET',
        headers: {
          ...init.headers,
          ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        ...(this.signal ? { signal: this.signal } : {}),
      });
    } catch {
      throw new Error(`provider "${this.provider}": the model list could not be fetched (network)`);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(
        `provider "${this.provider}": the model list request answered HTTP ${response.status}`,
      );
    }
    try {
      return (await response.json()) as T;
    } catch {
      throw new Error(`provider "${this.provider}": the model list was not JSON`);
    }
  }
}

async function listOpenAIStyle(
  http: Http,
  provider: ProviderConfig,
  credentials: Credentials,
): Promise<ListedModel[]> {
  const base =
    provider.kind === 'openai' ? (provider.baseUrl ?? defaults.openai) : chatBaseUrl(provider);
  const body = await http.json<{ data?: { id: string; max_model_len?: number }[] }>(
    `${base}/models`,
    {
      headers: {
        ...credentials.headers,
        ...(credentials.apiKey ? { authorization: `Bearer ${credentials.apiKey}` } : {}),
      },
    },
  );
  return (body.data ?? []).map((model) => ({
    modelId: model.id,
    displayName: null,
    // vLLM reports the context length it serves the model with.
    reported: typeof model.max_model_len === 'number' ? { contextWindow: model.max_model_len } : {},
  }));
}

async function listAnthropic(
  http: Http,
  provider: ProviderConfig,
  credentials: Credentials,
): Promise<ListedModel[]> {
  const base = provider.baseUrl ?? defaults.anthropic;
  const models: ListedModel[] = [];
  let after: string | null = null;
  for (let page = 0; page < 50; page++) {
    const query: string = `limit=1000${after ? `&after_id=${encodeURIComponent(after)}` : ''}`;
    const body = await http.json<{
      data?: { id: string; display_name?: string }[];
      has_more?: boolean;
      last_id?: string | null;
    }>(`${base}/models?${query}`, {
      headers: {
        ...credentials.headers,
        'x-api-key': credentials.apiKey ?? '',
        'anthropic-version': '2023-06-01',
      },
    });
    for (const model of body.data ?? []) {
      models.push({ modelId: model.id, displayName: model.display_name ?? null, reported: {} });
    }
    if (!body.has_more || !body.last_id) break;
    after = body.last_id;
  }
  return models;
}

async function listGoogle(
  http: Http,
  provider: ProviderConfig,
  credentials: Credentials,
): Promise<ListedModel[]> {
  const base = provider.baseUrl ?? defaults.google;
  const models: ListedModel[] = [];
  let token: string | null = null;
  for (let page = 0; page < 50; page++) {
    const query: string = `pageSize=1000${token ? `&pageToken=${encodeURIComponent(token)}` : ''}`;
    const body = await http.json<{
      models?: {
        name: string;
        displayName?: string;
        inputTokenLimit?: number;
        outputTokenLimit?: number;
        supportedGenerationMethods?: string[];
        thinking?: boolean;
      }[];
      nextPageToken?: string;
    }>(`${base}/models?${query}`, {
      headers: { ...credentials.headers, 'x-goog-api-key': credentials.apiKey ?? '' },
    });
    for (const model of body.models ?? []) {
      // Embedding and other non-chat models cannot serve an agent.
      if (!(model.supportedGenerationMethods ?? []).includes('generateContent')) continue;
      const reported: Partial<ModelCapabilities> = {};
      if (model.inputTokenLimit) reported.contextWindow = model.inputTokenLimit;
      if (model.outputTokenLimit) reported.maxOutputTokens = model.outputTokenLimit;
      if (typeof model.thinking === 'boolean') reported.reasoning = model.thinking;
      models.push({
        modelId: model.name.replace(/^models\//, ''),
        displayName: model.displayName ?? null,
        reported,
      });
    }
    if (!body.nextPageToken) break;
    token = body.nextPageToken;
  }
  return models;
}

async function listOllama(
  http: Http,
  provider: ProviderConfig,
  credentials: Credentials,
): Promise<ListedModel[]> {
  const base = provider.baseUrl ?? '';
  const headers = {
    ...credentials.headers,
    ...(credentials.apiKey ? { authorization: `Bearer ${credentials.apiKey}` } : {}),
  };
  const tags = await http.json<{ models?: { name: string }[] }>(`${base}/api/tags`, { headers });
  const models: ListedModel[] = [];
  for (const tag of tags.models ?? []) {
    const show = await http.json<{
      capabilities?: string[];
      model_info?: Record<string, unknown>;
    }>(`${base}/api/show`, { method: 'POST', headers, body: { model: tag.name } });
    const reported: Partial<ModelCapabilities> = {};
    if (Array.isArray(show.capabilities)) {
      reported.tools = show.capabilities.includes('tools');
      reported.vision = show.capabilities.includes('vision');
      reported.reasoning = show.capabilities.includes('thinking');
    }
    const contextLength = Object.entries(show.model_info ?? {}).find(([key]) =>
      key.endsWith('.context_length'),
    )?.[1];
    if (typeof contextLength === 'number') reported.contextWindow = contextLength;
    models.push({ modelId: tag.name, displayName: null, reported });
  }
  return models;
}
