import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { Circuit, withCircuit, type CircuitChange } from '../src/providers/circuit.js';
import { ProviderFailure } from '../src/providers/failure.js';

/** A clock the test moves. */
function clock() {
  let now = 1_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

const finish: LanguageModelV3StreamPart = {
  type: 'finish',
  finishReason: { unified: 'stop', raw: 'stop' },
  usage: {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  },
};

/** A provider that answers each call with the next scripted outcome. */
function scripted(outcomes: ('ok' | 'transient' | 'permanent' | 'cut')[]) {
  let calls = 0;
  const model = {
    specificationVersion: 'v3',
    provider: 'scripted',
    modelId: 'm',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('not used')),
    doStream: async () => {
      const outcome = outcomes[calls++] ?? 'ok';
      if (outcome === 'transient' || outcome === 'permanent') {
        throw new APICallError({
          message: outcome,
          url: 'scripted://',
          requestBodyValues: {},
          statusCode: outcome === 'transient' ? 503 : 401,
          isRetryable: outcome === 'transient',
        });
      }
      const parts: LanguageModelV3StreamPart[] =
        outcome === 'ok'
          ? [{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'hi' }, finish]
          : [{ type: 'text-start', id: 't' }];
      return {
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            if (outcome === 'cut') controller.error(new TypeError('terminated'));
            else controller.close();
          },
        }),
      };
    },
  } as unknown as LanguageModelV3;
  return { model, calls: () => calls };
}

/** `ok`, the refusing ProviderFailure's code, or `failed`. */
async function call(model: LanguageModelV3): Promise<string> {
  try {
    const result = await model.doStream({ prompt: [] });
    const reader = result.stream.getReader();
    for (;;) {
      const next = await reader.read();
      if (next.done) return 'ok';
    }
  } catch (error) {
    return error instanceof ProviderFailure ? error.code : 'failed';
  }
}

describe('provider circuit', () => {
  it('opens after consecutive transient failures, refuses calls, then lets one probe close it', async () => {
    const time = clock();
    const changes: CircuitChange[] = [];
    const circuit = new Circuit(
      'p',
      { failures: 3, openMs: 10_000 },
      (c) => changes.push(c),
      time.now,
    );
    const provider = scripted(['transient', 'cut', 'transient', 'ok']);
    const model = withCircuit(provider.model, circuit);

    expect(await call(model)).toBe('failed');
    expect(await call(model)).toBe('failed');
    expect(circuit.state()).toBe('closed');
    expect(await call(model)).toBe('failed');
    expect(circuit.state()).toBe('open');
    // Open: refused without a call to the provider.
    expect(await call(model)).toBe('provider_circuit_open');
    expect(provider.calls()).toBe(3);

    time.advance(10_000);
    expect(circuit.state()).toBe('half_open');
    expect(await call(model)).toBe('ok');
    expect(circuit.state()).toBe('closed');
    expect(provider.calls()).toBe(4);
    expect(changes.map((c) => c.state)).toEqual(['open', 'half_open', 'closed']);
    expect(changes[0]).toEqual({ provider: 'p', state: 'open', failures: 3 });
  });

  it('a failed probe opens it again; a second caller is refused while the probe runs', async () => {
    const time = clock();
    const circuit = new Circuit('p', { failures: 1, openMs: 5_000 }, () => {}, time.now);
    circuit.failed();
    expect(circuit.state()).toBe('open');
    time.advance(5_000);
    expect(circuit.admit()).toBe(true);
    expect(circuit.admit()).toBe(false);
    circuit.failed();
    expect(circuit.state()).toBe('open');
    time.advance(4_999);
    expect(circuit.admit()).toBe(false);
    time.advance(1);
    expect(circuit.admit()).toBe(true);
    circuit.abandoned();
    expect(circuit.admit()).toBe(true);
  });

  it('permanent refusals and successes do not count toward opening', async () => {
    const circuit = new Circuit('p', { failures: 2, openMs: 5_000 });
    const model = withCircuit(
      scripted(['transient', 'permanent', 'ok', 'transient', 'permanent', 'transient']).model,
      circuit,
    );
    expect(await call(model)).toBe('failed');
    expect(await call(model)).toBe('failed');
    expect(circuit.state()).toBe('closed');
    expect(await call(model)).toBe('ok');
    expect(await call(model)).toBe('failed');
    expect(await call(model)).toBe('failed');
    expect(circuit.state()).toBe('closed');
    expect(await call(model)).toBe('failed');
    expect(circuit.state()).toBe('open');
  });

  it('failures 0 never opens', () => {
    const circuit = new Circuit('p', { failures: 0, openMs: 5_000 });
    for (let i = 0; i < 50; i++) circuit.failed();
    expect(circuit.state()).toBe('closed');
  });
});
