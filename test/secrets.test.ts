import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { classifyTopic } from '../src/providers/gate.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { streamStep } from '../src/runtime/modelStep.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { ProviderServer } from './support/providerServer.js';
import {
  fixtureEnv,
  headerSecret,
  kindCases,
  kindConfig,
  providerKey,
} from './support/providerKinds.js';
import { request } from './support/server.js';

/**
 * The grep test: drive every failure path of the provider side with a real key and
 * provider bodies that carry a marker, capture everything a person or a client could
 * see (logs, error messages, API bodies, verdicts), and find neither.
 */
const bodyMarker = 'PROVIDER-BODY-acct_5521-do-not-leak';
const captured: string[] = [];
let logs = '';
let providers: ProviderServer;
let running: Running;
let drop: () => Promise<void>;

beforeAll(async () => {
  providers = await ProviderServer.start();
  const leaky = { error: { message: `denied for ${providerKey} (${bodyMarker})`, type: 'x' } };
  for (const path of ['/v1/models', '/v1beta/models', '/api/tags']) {
    providers.on('GET', path, { status: 401, json: leaky });
  }
  const fresh = await freshStorage();
  drop = fresh.drop;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs += chunk.toString();
      done();
    },
  });
  const url = providers.url;
  const config = testConfig(
    fresh.storage,
    {
      providers: {
        demo: { kind: 'demo' },
        openai: {
          kind: 'openai',
          api_key_env: 'TEST_PROVIDER_KEY',
          base_url: `${url}/v1`,
          headers_from_env: { 'X-Parley-Test': 'TEST_HEADER_VALUE' },
        },
        gemini: { kind: 'google', api_key_env: 'TEST_PROVIDER_KEY', base_url: `${url}/v1beta` },
        local: { kind: 'ollama', base_url: url },
      },
      agents: { default: { model: 'openai/gpt-4.1-mini' } },
    },
    fixtureEnv,
  );
  running = await startProcess(
    config,
    { api: true, worker: false },
    createLogger({ level: 'debug', destination: sink }),
    {
      env: fixtureEnv,
    },
  );
});
afterAll(async () => {
  await running.stop();
  await drop();
  await providers.close();
});

describe('no key and no provider body reaches a log, an error or an API body', () => {
  it('collects every failure path', async () => {
    const sync = await request(running.url!, 'POST', '/api/v1/admin/models/sync', {});
    expect(sync.status).toBe(200);
    expect(sync.body.providers.filter((report: any) => !report.ok)).toHaveLength(3);
    captured.push(JSON.stringify(sync.body));
    captured.push(JSON.stringify((await request(running.url!, 'GET', '/api/v1/models')).body));

    for (const kindCase of kindCases) {
      const model = createModelRegistry(kindConfig(kindCase, providers.url), fixtureEnv)(
        'fixture',
        kindCase.model,
      );
      for (const status of [400, 401, 403, 404, 429, 500, 503]) {
        providers.on('POST', kindCase.chatPath(kindCase.model), {
          status,
          headers: { 'retry-after': '1' },
          json: {
            error: {
              message: `${bodyMarker} ${providerKey}`,
              type: 'invalid_request_error',
              code: 'x',
            },
          },
        });
        const error = await streamStep(
          model,
          [{ role: 'user', content: [{ type: 'text', text: `secret prompt ${providerKey}` }] }],
          { push: () => {} },
          new AbortController().signal,
        ).then(
          () => new Error('the call did not fail'),
          (caught: unknown) => caught as Error,
        );
        captured.push(error.toString(), error.message, JSON.stringify(error), String(error.stack));
        const verdict = await classifyTopic(model, { topic: 't', input: 'x', timeoutMs: 5000 });
        captured.push(JSON.stringify(verdict));
      }
    }
  });

  it('finds neither the key, nor a header value, nor the provider body', () => {
    const everything = [...captured, logs].join('\n');
    expect(logs).toContain('model catalog sync failed');
    expect(captured.length).toBeGreaterThan(100);
    for (const secret of [providerKey, headerSecret, bodyMarker]) {
      expect(everything).not.toContain(secret);
    }
  });
});
