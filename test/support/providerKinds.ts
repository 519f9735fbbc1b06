import { compileConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/types.js';

/**
 * Each provider kind as the fixture server plays it: its configuration (pointed at the
 * server), the path its chat calls hit, and its fixtures directory.
 */
export interface KindCase {
  name: string;
  kind: string;
  provider: (url: string) => Record<string, unknown>;
  model: string;
  chatPath: (model: string) => string;
  fixtures: string;
  /** The fixture with reasoning parts, where the kind's wire format has them. */
  reasoning: string | null;
  /** Whether the fixtures report cached input tokens. */
  cachedInput: boolean;
}

export const providerKey = 'sk-test-NEVER-IN-LOGS-4f1c9a';
export const headerSecret = 'hdr-secret-NEVER-IN-LOGS-77d2';

export const kindCases: KindCase[] = [
  {
    name: 'openai (Responses API)',
    kind: 'openai',
    provider: (url) => ({
      kind: 'openai',
      api_key_env: 'TEST_PROVIDER_KEY',
      base_url: `${url}/v1`,
    }),
    model: 'gpt-4.1-mini',
    chatPath: () => '/v1/responses',
    fixtures: 'openai',
    reasoning: 'openai/reasoning.txt',
    cachedInput: true,
  },
  {
    name: 'openai (api: chat)',
    kind: 'openai',
    provider: (url) => ({
      kind: 'openai',
      api: 'chat',
      api_key_env: 'TEST_PROVIDER_KEY',
      base_url: `${url}/v1`,
    }),
    model: 'gpt-4.1-mini',
    chatPath: () => '/v1/chat/completions',
    fixtures: 'openai-chat',
    reasoning: null,
    cachedInput: true,
  },
  {
    name: 'openai_compatible',
    kind: 'openai_compatible',
    provider: (url) => ({
      kind: 'openai_compatible',
      api_key_env: 'TEST_PROVIDER_KEY',
      base_url: `${url}/v1`,
    }),
    model: 'deepseek-reasoner',
    chatPath: () => '/v1/chat/completions',
    fixtures: 'openai-chat',
    reasoning: 'openai-chat/reasoning.txt',
    cachedInput: true,
  },
  {
    name: 'anthropic',
    kind: 'anthropic',
    provider: (url) => ({
      kind: 'anthropic',
      api_key_env: 'TEST_PROVIDER_KEY',
      base_url: `${url}/v1`,
    }),
    model: 'claude-sonnet-4-5',
    chatPath: () => '/v1/messages',
    fixtures: 'anthropic',
    reasoning: 'anthropic/thinking.txt',
    cachedInput: true,
  },
  {
    name: 'google',
    kind: 'google',
    provider: (url) => ({
      kind: 'google',
      api_key_env: 'TEST_PROVIDER_KEY',
      base_url: `${url}/v1beta`,
    }),
    model: 'gemini-2.5-flash',
    chatPath: (model) => `/v1beta/models/${model}:streamGenerateContent`,
    fixtures: 'google',
    reasoning: 'google/thoughts.txt',
    cachedInput: true,
  },
  {
    name: 'ollama',
    kind: 'ollama',
    provider: (url) => ({ kind: 'ollama', base_url: url }),
    model: 'qwen3:8b',
    chatPath: () => '/v1/chat/completions',
    fixtures: 'ollama',
    reasoning: 'ollama/reasoning.txt',
    cachedInput: false,
  },
];

/** A configuration with one agent on this kind's provider, pointed at the fixture server. */
export function kindConfig(
  kindCase: KindCase,
  url: string,
  agent: Record<string, unknown> = {},
): Config {
  return compileConfig(
    {
      providers: {
        fixture: {
          ...kindCase.provider(url),
          headers_from_env: { 'X-Parley-Test': 'TEST_HEADER_VALUE' },
        },
      },
      agents: { default: { model: `fixture/${kindCase.model}`, ...agent } },
    },
    { TEST_PROVIDER_KEY: providerKey, TEST_HEADER_VALUE: headerSecret },
  );
}

export const fixtureEnv = { TEST_PROVIDER_KEY: providerKey, TEST_HEADER_VALUE: headerSecret };
