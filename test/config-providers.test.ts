import { describe, expect, it } from 'vitest';
import { compileConfig, ConfigError } from '../src/config/load.js';

/** Configuration of real models: providers, agent settings, catalog, pricing, limits. */
describe('configuration of providers and models (CONFIG.md)', () => {
  const secret = 'sk-live-VALUE-NEVER-ECHOED-91ab';

  it('accepts every provider kind with its keys, and compiles the agent settings', () => {
    const config = compileConfig(
      {
        providers: {
          demo: { kind: 'demo' },
          openai: {
            kind: 'openai',
            api_key_env: 'OPENAI_API_KEY',
            api: 'chat',
            headers_from_env: { 'OpenAI-Organization': 'OPENAI_ORG' },
          },
          local: { kind: 'openai_compatible', base_url: 'http://127.0.0.1:8000/v1/' },
          claude: { kind: 'anthropic', api_key_env: 'ANTHROPIC_API_KEY' },
          gemini: { kind: 'google', api_key_env: 'GEMINI_API_KEY' },
          ollama: { kind: 'ollama', base_url: 'http://127.0.0.1:11434' },
        },
        pricing: {
          'openai/gpt-4.1-mini': { input: 0.4, output: 1.6, cached_input: 0.1 },
          'claude/claude-sonnet-4-5': { input: 3, output: 15 },
        },
        catalog: { refresh_hours: 6, strict: true },
        models: { 'ollama/qwen3:8b': { context_window: 40960, tools: true } },
        limits: { attachment_bytes: 1000 },
        agents: {
          default: {
            model: 'openai/gpt-4.1-mini',
            temperature: 0.2,
            max_output_tokens: 800,
            provider_options: { openai: { reasoningEffort: 'low' } },
            vision: 'never',
            gate: { model: 'ollama/qwen3:8b', topic: 'cooking', redirect: 'Only cooking here.' },
          },
        },
      },
      { OPENAI_API_KEY: secret, OPENAI_ORG: 'org-1' },
    );
    expect(config.providers.openai).toMatchObject({
      kind: 'openai',
      api: 'chat',
      apiKeyEnv: 'OPENAI_API_KEY',
      headersFromEnv: { 'OpenAI-Organization': 'OPENAI_ORG' },
    });
    expect(config.providers.claude?.api).toBe('responses');
    expect(config.providers.local?.baseUrl).toBe('http://127.0.0.1:8000/v1');
    expect(config.agents.default).toMatchObject({
      temperature: 0.2,
      maxOutputTokens: 800,
      providerOptions: { openai: { reasoningEffort: 'low' } },
      vision: 'never',
      gate: {
        model: { provider: 'ollama', modelId: 'qwen3:8b' },
        topic: 'cooking',
        redirect: 'Only cooking here.',
        timeoutMs: 10_000,
      },
    });
    expect(config.pricing['openai/gpt-4.1-mini']).toEqual({
      input: 0.4,
      output: 1.6,
      cachedInput: 0.1,
    });
    // cached input defaults to the input price
    expect(config.pricing['claude/claude-sonnet-4-5']?.cachedInput).toBe(3);
    expect(config.catalog).toEqual({ refreshHours: 6, strict: true, timeoutMs: 15_000 });
    expect(config.models['ollama/qwen3:8b']).toEqual({ contextWindow: 40960, tools: true });
    expect(config.limits.attachmentBytes).toBe(1000);
    // the key's value is read when the model is created, never kept in the configuration
    expect(JSON.stringify(config)).not.toContain(secret);
  });

  it('defaults: vision auto, no sampling settings, a 10 MB attachment limit, catalog daily', () => {
    const config = compileConfig({});
    expect(config.agents.default).toMatchObject({
      temperature: null,
      maxOutputTokens: null,
      providerOptions: {},
      vision: 'auto',
      gate: null,
    });
    expect(config.limits.attachmentBytes).toBe(10 * 1024 * 1024);
    expect(config.catalog).toMatchObject({ refreshHours: 24, strict: false });
  });

  it('stops start-up when an agent needs a key variable that is not set, naming the variable', () => {
    const file = {
      providers: { openai: { kind: 'openai', api_key_env: 'OPENAI_API_KEY' } },
      agents: { default: { model: 'openai/gpt-4.1-mini' } },
    };
    expect(() => compileConfig(file, {})).toThrow(ConfigError);
    expect(() => compileConfig(file, {})).toThrow(/agents\.default\.model.*OPENAI_API_KEY/);
    // a gate's provider is checked too, and so are header variables
    const gated = {
      providers: {
        demo: { kind: 'demo' },
        claude: {
          kind: 'anthropic',
          api_key_env: 'ANTHROPIC_API_KEY',
          headers_from_env: { 'anthropic-beta': 'ANTHROPIC_BETA' },
        },
      },
      agents: { default: { gate: { model: 'claude/claude-haiku-4-5', topic: 't' } } },
    };
    expect(() => compileConfig(gated, { ANTHROPIC_API_KEY: secret })).toThrow(
      /agents\.default\.gate\.model.*ANTHROPIC_BETA/,
    );
    // a provider that no agent uses needs nothing at start
    expect(() =>
      compileConfig({
        providers: { demo: { kind: 'demo' }, openai: { kind: 'openai', api_key_env: 'NOPE' } },
      }),
    ).not.toThrow();
  });

  it.each([
    [{ providers: { o: { kind: 'openai' } } }, 'providers.o.api_key_env'],
    [{ providers: { o: { kind: 'ollama' } } }, 'providers.o.base_url'],
    [{ providers: { o: { kind: 'anthropic', api_key_env: 'K', api: 'chat' } } }, 'providers.o.api'],
    [{ providers: { o: { kind: 'openai', api_key_env: 'K', api: 'soap' } } }, 'providers.o.api'],
    [{ providers: { o: { kind: 'ollama', base_url: 'not a url' } } }, 'providers.o.base_url'],
    [
      { providers: { o: { kind: 'openai', api_key_env: 'lower-case key' } } },
      'providers.o.api_key_env',
    ],
    [
      { providers: { o: { kind: 'openai', api_key_env: 'K', headers: { A: 'b' } } } },
      'providers.o',
    ],
    [{ agents: { a: { temperature: 3 } } }, 'agents.a.temperature'],
    [{ agents: { a: { vision: 'sometimes' } } }, 'agents.a.vision'],
    [{ agents: { a: { gate: { model: 'ghost/x', topic: 't' } } } }, 'agents.a.gate.model'],
    [{ agents: { a: { gate: { model: 'demo/gate' } } } }, 'agents.a.gate.topic'],
    [{ pricing: { 'demo/echo': { input: -1, output: 1 } } }, 'pricing.demo/echo.input'],
    [{ models: { 'ghost/x': { tools: true } } }, 'models.ghost/x'],
    [{ models: { 'demo/echo': { context_window: 'big' } } }, 'models.demo/echo.context_window'],
    [{ catalog: { refresh_hours: 0 } }, 'catalog.refresh_hours'],
    [{ limits: { attachment_bytes: 0 } }, 'limits.attachment_bytes'],
  ])('rejects %j naming the key %s', (raw, key) => {
    expect(() => compileConfig(raw, { K: 'x' })).toThrow(ConfigError);
    expect(() => compileConfig(raw, { K: 'x' })).toThrow(key);
  });

  it('never echoes a header or key value in its errors', () => {
    let message = '';
    try {
      compileConfig({
        providers: { o: { kind: 'openai', api_key_env: secret, extra: secret } },
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('providers.o');
    expect(message).not.toContain(secret);
  });
});
