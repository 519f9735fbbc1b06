import type { LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createModelRegistry } from '../src/providers/registry.js';
import {
  agentCallSettings,
  ProviderFailure,
  streamStep,
  type StepResult,
} from '../src/runtime/modelStep.js';
import { retryDelayMs } from '../src/time/backoff.js';
import { ProviderServer } from './support/providerServer.js';
import {
  fixtureEnv,
  headerSecret,
  kindCases,
  kindConfig,
  providerKey,
  type KindCase,
} from './support/providerKinds.js';

/** Text that only a provider's error body carries: it must never reach a message. */
const bodyMarker = 'PROVIDER-BODY-org_7781-secret-detail';

let server: ProviderServer;
beforeAll(async () => {
  server = await ProviderServer.start();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => server.reset());

const clockTool: LanguageModelV3FunctionTool = {
  type: 'function',
  name: 'clock',
  description: 'The time now.',
  inputSchema: { type: 'object', properties: { timezone: { type: 'string' } } },
};
const calculatorTool: LanguageModelV3FunctionTool = {
  type: 'function',
  name: 'calculator',
  description: 'Arithmetic.',
  inputSchema: { type: 'object', properties: { expression: { type: 'string' } } },
};

function sink() {
  const deltas: string[] = [];
  return { deltas, push: (delta: string) => void deltas.push(delta) };
}

async function run(
  kindCase: KindCase,
  agent: Record<string, unknown> = {},
): Promise<{ result: StepResult; deltas: string[]; reasoning: string[] }> {
  const config = kindConfig(kindCase, server.url, agent);
  const model = createModelRegistry(config, fixtureEnv)('fixture', kindCase.model);
  const settings = config.agents.default!;
  const text = sink();
  const reasoning: string[] = [];
  const result = await streamStep(
    model,
    [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: [{ type: 'text', text: 'hello' }] },
    ],
    text,
    new AbortController().signal,
    [clockTool, calculatorTool],
    {
      settings: agentCallSettings(settings),
      onReasoning: (delta) => reasoning.push(delta),
    },
  );
  return { result, deltas: text.deltas, reasoning };
}

async function failure(kindCase: KindCase): Promise<ProviderFailure> {
  try {
    await run(kindCase);
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderFailure);
    const failed = error as ProviderFailure;
    expect(failed.message).not.toContain(bodyMarker);
    expect(failed.message).not.toContain(providerKey);
    return failed;
  }
  throw new Error('the call did not fail');
}

function errorBody(kindCase: KindCase, status: number, kind: string, message: string): unknown {
  const text = `${message} (${bodyMarker})`;
  if (kindCase.kind === 'anthropic') return { type: 'error', error: { type: kind, message: text } };
  if (kindCase.kind === 'google') return { error: { code: status, message: text, status: kind } };
  return { error: { message: text, type: kind, code: kind, param: null } };
}

describe.each(kindCases)('provider kind $name through its AI SDK client, over HTTP', (kindCase) => {
  const path = kindCase.chatPath(kindCase.model);
  const at = (name: string) => `${kindCase.fixtures}/${name}`;

  it('streams text, with usage, and sends the key and headers the configuration names', async () => {
    server.on('POST', path, { stream: at('text.txt') });
    const { result, deltas } = await run(kindCase, { temperature: 0.3, max_output_tokens: 256 });
    expect(result.text).toBe('Hello, world!');
    expect(deltas.join('')).toBe('Hello, world!');
    expect(result.calls).toEqual([]);
    expect(result).toMatchObject({ inputTokens: 21, outputTokens: 4 });
    expect(result.cachedInputTokens).toBe(
      kindCase.cachedInput && kindCase.kind !== 'ollama' ? 8 : 0,
    );
    expect(result.finishReason).toBe('stop');
    expect(result.ttftMs).not.toBeNull();
    expect(result.ttftMs!).toBeLessThanOrEqual(result.latencyMs);

    const sent = server.requests[0]!;
    expect(sent.path).toBe(path);
    expect(sent.headers['x-parley-test']).toBe(headerSecret);
    const credential = [
      sent.headers.authorization,
      sent.headers['x-api-key'],
      sent.headers['x-goog-api-key'],
    ];
    expect(credential).toContain(
      kindCase.kind === 'ollama'
        ? undefined
        : kindCase.kind === 'anthropic'
          ? providerKey
          : kindCase.kind === 'google'
            ? providerKey
            : `Bearer ${providerKey}`,
    );
    const body = JSON.parse(sent.body);
    const temperature = body.temperature ?? body.generationConfig?.temperature;
    expect(temperature).toBe(0.3);
    if (kindCase.kind === 'google') expect(sent.query.get('alt')).toBe('sse');
    if (kindCase.kind === 'openai_compatible' || kindCase.kind === 'ollama') {
      expect(body.stream_options).toEqual({ include_usage: true });
    }
  });

  it('returns a tool call with parsed arguments', async () => {
    server.on('POST', path, { stream: at('tool-call.txt') });
    const { result } = await run(kindCase);
    expect(result.calls).toHaveLength(1);
    expect(result.calls[0]).toMatchObject({
      tool: 'clock',
      arguments: { timezone: 'Europe/Paris' },
    });
    expect(result.calls[0]!.call_id).toMatch(/\S/);
    expect(result.finishReason).toBe('tool-calls');
    expect(result).toMatchObject({ inputTokens: 40, outputTokens: 18 });
  });

  it('returns parallel tool calls in order', async () => {
    server.on('POST', path, { stream: at('parallel-tools.txt') });
    const { result } = await run(kindCase);
    expect(result.calls.map((call) => [call.tool, call.arguments])).toEqual([
      ['clock', { timezone: 'UTC' }],
      ['calculator', { expression: '6*7' }],
    ]);
    expect(new Set(result.calls.map((call) => call.call_id)).size).toBe(2);
  });

  // Chat Completions at OpenAI itself streams no reasoning text: nothing to test there.
  const itWithReasoning = kindCase.reasoning === null ? () => {} : it;
  itWithReasoning(
    'delivers reasoning through its own callback, never inside the reply',
    async () => {
      server.on('POST', path, { stream: kindCase.reasoning! });
      const { result, deltas, reasoning } = await run(kindCase);
      expect(reasoning.join('')).toContain('The user asks for 2+2. That is 4.');
      expect(result.reasoning).toBe(reasoning.join(''));
      expect(result.text).toBe('2 + 2 = 4.');
      expect(deltas.join('')).not.toContain('The user asks');
      expect(result.outputTokens).toBeGreaterThan(0);
      if (kindCase.kind !== 'ollama' && kindCase.kind !== 'anthropic') {
        expect(result.reasoningTokens).toBe(96);
      }
    },
  );

  it('classifies 429 as transient and exposes retry-after (seconds)', async () => {
    server.on('POST', path, {
      status: 429,
      headers: { 'retry-after': '7' },
      json: errorBody(kindCase, 429, 'rate_limit_error', 'Rate limit reached'),
    });
    const failed = await failure(kindCase);
    expect(failed).toMatchObject({
      isRetryable: true,
      code: 'provider_unavailable',
      statusCode: 429,
      retryAfterMs: 7000,
    });
  });

  it('classifies 500 as transient', async () => {
    server.on('POST', path, {
      status: 500,
      json: errorBody(kindCase, 500, 'server_error', 'The server had an error'),
    });
    expect(await failure(kindCase)).toMatchObject({
      isRetryable: true,
      code: 'provider_unavailable',
      statusCode: 500,
      retryAfterMs: null,
    });
  });

  it('classifies 401 as provider_auth, permanent', async () => {
    server.on('POST', path, {
      status: 401,
      json: errorBody(kindCase, 401, 'authentication_error', 'Incorrect API key provided'),
    });
    expect(await failure(kindCase)).toMatchObject({
      isRetryable: false,
      code: 'provider_auth',
      statusCode: 401,
    });
  });

  it("classifies the provider's context-too-long refusal as context_length", async () => {
    const refusal = {
      openai:
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
      openai_compatible:
        "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.",
      anthropic: 'prompt is too long: 208310 tokens > 200000 maximum',
      google:
        'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
      ollama: 'the input length exceeds the context length',
    }[kindCase.kind]!;
    const code = kindCase.kind.startsWith('openai')
      ? 'context_length_exceeded'
      : 'invalid_request_error';
    server.on('POST', path, { status: 400, json: errorBody(kindCase, 400, code, refusal) });
    expect(await failure(kindCase)).toMatchObject({
      isRetryable: false,
      code: 'context_length',
      statusCode: 400,
    });
  });

  it('classifies another 400 as provider_rejected', async () => {
    server.on('POST', path, {
      status: 400,
      json: errorBody(kindCase, 400, 'invalid_request_error', 'Invalid value for temperature'),
    });
    expect(await failure(kindCase)).toMatchObject({
      isRetryable: false,
      code: 'provider_rejected',
    });
  });

  it('classifies a stream cut mid-way as transient, after the text so far', async () => {
    server.on('POST', path, { stream: at('text.txt'), cutAfter: 'Hello' });
    const failed = await failure(kindCase);
    expect(failed).toMatchObject({ isRetryable: true, code: 'provider_unavailable' });
  });
});

describe('retry-after', () => {
  it('reads an HTTP date and retry-after-ms', async () => {
    const kindCase = kindCases[0]!;
    const path = kindCase.chatPath(kindCase.model);
    server.on('POST', path, {
      status: 503,
      headers: { 'retry-after': new Date(Date.now() + 60_000).toUTCString() },
      json: {},
    });
    const dated = await failure(kindCase);
    expect(dated.retryAfterMs).toBeGreaterThan(50_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(60_000);
    server.reset();
    server.on('POST', path, { status: 429, headers: { 'retry-after-ms': '1500' }, json: {} });
    expect((await failure(kindCase)).retryAfterMs).toBe(1500);
  });

  it('reports a refused connection as transient', async () => {
    const kindCase = kindCases[0]!;
    const closed = await ProviderServer.start();
    const url = closed.url;
    await closed.close();
    const config = kindConfig(kindCase, url);
    const model = createModelRegistry(config, fixtureEnv)('fixture', kindCase.model);
    const error = await streamStep(
      model,
      [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      sink(),
      new AbortController().signal,
    ).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ isRetryable: true, code: 'provider_unavailable' });
  });
});

describe('retry delay', () => {
  it('waits at least what retry-after asks, within a cap, else the backoff', () => {
    const half = () => 0.5;
    expect(retryDelayMs({ retryAfterMs: null }, 500, 1, half)).toBe(375);
    expect(retryDelayMs({ retryAfterMs: 7000 }, 500, 1, half)).toBe(7000);
    expect(retryDelayMs({ retryAfterMs: 10 }, 500, 2, half)).toBe(750);
    expect(retryDelayMs({ retryAfterMs: 600_000 }, 500, 1, half)).toBe(60_000);
  });
});

describe('agent call settings', () => {
  it('passes only what the agent sets', () => {
    const config = kindConfig(kindCases[0]!, 'http://127.0.0.1:1', {
      temperature: 0,
      provider_options: { openai: { reasoningEffort: 'low' } },
    });
    expect(agentCallSettings(config.agents.default!)).toEqual({
      temperature: 0,
      providerOptions: { openai: { reasoningEffort: 'low' } },
    });
    expect(
      agentCallSettings(kindConfig(kindCases[0]!, 'http://127.0.0.1:1').agents.default!),
    ).toEqual({});
  });
});
