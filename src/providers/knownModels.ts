import type { ModelCapabilities, ProviderKind } from '../config/types.js';

/**
 * Capabilities Parley ships for models whose provider does not say (OpenAI's and
 * Anthropic's model lists carry ids only). Matched by the longest prefix of the model id,
 * lowercased, after any `org/` path (`Qwen/Qwen3-8B` → `qwen3-8b`). What a provider
 * reports wins over this table, and the configuration's `models:` overrides win over both.
 * Figures from the providers' model pages; a wrong or missing entry is fixed in the
 * configuration without a release.
 */
type Known = Partial<ModelCapabilities>;

const all: Known = { tools: true, vision: true };
const openai: [string, Known][] = [
  ['gpt-5', { ...all, reasoning: true, contextWindow: 400_000, maxOutputTokens: 128_000 }],
  ['gpt-4.1', { ...all, reasoning: false, contextWindow: 1_047_576, maxOutputTokens: 32_768 }],
  ['gpt-4o', { ...all, reasoning: false, contextWindow: 128_000, maxOutputTokens: 16_384 }],
  ['gpt-4-turbo', { ...all, reasoning: false, contextWindow: 128_000, maxOutputTokens: 4_096 }],
  [
    'gpt-3.5-turbo',
    { tools: true, vision: false, reasoning: false, contextWindow: 16_385, maxOutputTokens: 4_096 },
  ],
  ['o4-mini', { ...all, reasoning: true, contextWindow: 200_000, maxOutputTokens: 100_000 }],
  [
    'o3-mini',
    {
      tools: true,
      vision: false,
      reasoning: true,
      contextWindow: 200_000,
      maxOutputTokens: 100_000,
    },
  ],
  ['o3', { ...all, reasoning: true, contextWindow: 200_000, maxOutputTokens: 100_000 }],
  ['o1', { ...all, reasoning: true, contextWindow: 200_000, maxOutputTokens: 100_000 }],
];
const anthropic: [string, Known][] = [
  ['claude-opus-4', { ...all, reasoning: true, contextWindow: 200_000, maxOutputTokens: 32_000 }],
  ['claude-sonnet-4', { ...all, reasoning: true, contextWindow: 200_000, maxOutputTokens: 64_000 }],
  ['claude-haiku-4', { ...all, reasoning: true, contextWindow: 200_000, maxOutputTokens: 64_000 }],
  [
    'claude-3-7-sonnet',
    { ...all, reasoning: true, contextWindow: 200_000, maxOutputTokens: 64_000 },
  ],
  [
    'claude-3-5-sonnet',
    { ...all, reasoning: false, contextWindow: 200_000, maxOutputTokens: 8_192 },
  ],
  [
    'claude-3-5-haiku',
    { ...all, reasoning: false, contextWindow: 200_000, maxOutputTokens: 8_192 },
  ],
  ['claude-3-haiku', { ...all, reasoning: false, contextWindow: 200_000, maxOutputTokens: 4_096 }],
];
const google: [string, Known][] = [
  ['gemini-2.5', { ...all, reasoning: true, contextWindow: 1_048_576, maxOutputTokens: 65_536 }],
  ['gemini-2.0', { ...all, reasoning: false, contextWindow: 1_048_576, maxOutputTokens: 8_192 }],
  ['gemini-1.5', { ...all, reasoning: false, contextWindow: 1_048_576, maxOutputTokens: 8_192 }],
];
/** Open-weight families, as Ollama, vLLM or llama.cpp serve them. */
const openWeights: [string, Known][] = [
  ['llama3.1', { tools: true, vision: false, reasoning: false, contextWindow: 131_072 }],
  ['llama3.2-vision', { tools: false, vision: true, reasoning: false, contextWindow: 131_072 }],
  ['llama3.2', { tools: true, vision: false, reasoning: false, contextWindow: 131_072 }],
  ['llama3.3', { tools: true, vision: false, reasoning: false, contextWindow: 131_072 }],
  ['llama-3', { tools: true, vision: false, reasoning: false, contextWindow: 131_072 }],
  ['qwen3', { tools: true, vision: false, reasoning: true, contextWindow: 40_960 }],
  ['qwen2.5', { tools: true, vision: false, reasoning: false, contextWindow: 32_768 }],
  ['deepseek-r1', { tools: false, vision: false, reasoning: true, contextWindow: 131_072 }],
  ['deepseek-reasoner', { tools: false, vision: false, reasoning: true, contextWindow: 65_536 }],
  ['deepseek-chat', { tools: true, vision: false, reasoning: false, contextWindow: 65_536 }],
  ['mistral', { tools: true, vision: false, reasoning: false, contextWindow: 32_768 }],
  ['gemma3', { tools: false, vision: true, reasoning: false, contextWindow: 131_072 }],
  ['llava', { tools: false, vision: true, reasoning: false, contextWindow: 4_096 }],
];
const demo: [string, Known][] = [
  [
    'echo',
    { tools: true, vision: false, reasoning: false, contextWindow: 32_768, maxOutputTokens: 4_096 },
  ],
  [
    'vision',
    { tools: true, vision: true, reasoning: false, contextWindow: 32_768, maxOutputTokens: 4_096 },
  ],
  [
    'gate',
    { tools: true, vision: false, reasoning: false, contextWindow: 32_768, maxOutputTokens: 4_096 },
  ],
];

const tables: Record<ProviderKind, [string, Known][]> = {
  openai,
  anthropic,
  google,
  openai_compatible: [...openai, ...anthropic, ...google, ...openWeights],
  ollama: openWeights,
  demo,
  espeak: [],
  piper: [],
  elevenlabs: [],
  // fal's image models are no language models: nothing to know here.
  fal: [],
};

/** The demo provider's "listing": the model ids CONFIG.md gives a meaning to. */
export const demoModelIds = demo.map(([id]) => id);

export function knownCapabilities(kind: ProviderKind, modelId: string): Known {
  const name = (modelId.split('/').pop() ?? modelId).toLowerCase();
  let best: [string, Known] | null = null;
  for (const entry of tables[kind]) {
    if (name.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  }
  return best ? best[1] : {};
}
