import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { classifyTopic } from '../src/providers/gate.js';
import { createDemoModel } from '../src/providers/demo.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { ProviderServer } from './support/providerServer.js';
import { fixtureEnv, kindCases, kindConfig } from './support/providerKinds.js';

/** The scope gate as a function: a verdict through a forced tool call, fail-closed. */
const demo = createDemoModel({ modelId: 'gate', delayMs: 0 });
const topic = 'cooking and recipes';

describe('scope gate with the demo model (CONFIG.md)', () => {
  it('is on-topic by default, with the call usage', async () => {
    const verdict = await classifyTopic(demo, {
      topic,
      input: 'how long to boil an egg?',
      timeoutMs: 5000,
    });
    expect(verdict).toMatchObject({ on_topic: true, failed: false });
    expect(verdict.reason.length).toBeGreaterThan(0);
    expect(verdict.usage?.inputTokens).toBeGreaterThan(0);
  });

  it('is off-topic when the input contains /offtopic', async () => {
    const verdict = await classifyTopic(demo, {
      topic,
      input: 'who won the match? /offtopic',
      timeoutMs: 5000,
    });
    expect(verdict).toMatchObject({ on_topic: false, failed: false });
  });

  it('fails closed when the gate model errors, recording why', async () => {
    const verdict = await classifyTopic(demo, { topic, input: '/fail permanent', timeoutMs: 5000 });
    expect(verdict).toEqual({
      on_topic: false,
      failed: true,
      reason: 'gate failed: provider_auth',
      usage: null,
    });
  });

  it("rethrows the turn's own abort instead of inventing a verdict", async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled by a person'));
    await expect(
      classifyTopic(demo, { topic, input: 'hi', timeoutMs: 5000, signal: controller.signal }),
    ).rejects.toThrow('cancelled by a person');
  });
});

describe('scope gate over HTTP (openai_compatible fixtures)', () => {
  let server: ProviderServer;
  const kindCase = kindCases.find((candidate) => candidate.kind === 'openai_compatible')!;
  const path = kindCase.chatPath(kindCase.model);
  const model = () =>
    createModelRegistry(kindConfig(kindCase, server.url), fixtureEnv)('fixture', kindCase.model);
  beforeAll(async () => {
    server = await ProviderServer.start();
  });
  afterAll(async () => {
    await server.close();
  });
  beforeEach(() => server.reset());

  it('forces the classify_topic tool and reads its verdict and usage', async () => {
    server.on('POST', path, { stream: 'openai-chat/gate-verdict.txt' });
    const verdict = await classifyTopic(model(), { topic, input: 'who won?', timeoutMs: 5000 });
    expect(verdict).toMatchObject({
      on_topic: false,
      failed: false,
      reason: 'The message asks about football, not cooking.',
      usage: { inputTokens: 90, outputTokens: 14 },
    });
    const body = JSON.parse(server.requests[0]!.body);
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'classify_topic' } });
    expect(body.messages[0].content).toContain(topic);
    expect(body.messages[1].content).toBe('who won?');
  });

  it('fails closed on an unparsable verdict', async () => {
    server.on('POST', path, { stream: 'openai-chat/gate-unparsable.txt' });
    const verdict = await classifyTopic(model(), { topic, input: 'x', timeoutMs: 5000 });
    expect(verdict).toMatchObject({
      on_topic: false,
      failed: true,
      reason: 'gate failed: the verdict was not understood',
    });
    expect(verdict.usage?.inputTokens).toBe(90);
  });

  it('fails closed when the model answers in text instead of the tool', async () => {
    server.on('POST', path, { stream: 'openai-chat/text.txt' });
    const verdict = await classifyTopic(model(), { topic, input: 'x', timeoutMs: 5000 });
    expect(verdict).toMatchObject({
      on_topic: false,
      failed: true,
      reason: 'gate failed: the model gave no verdict',
    });
  });

  it('fails closed on a timeout', async () => {
    server.on('POST', path, { hang: true });
    const verdict = await classifyTopic(model(), { topic, input: 'x', timeoutMs: 150 });
    expect(verdict).toMatchObject({
      on_topic: false,
      failed: true,
      reason: 'gate failed: timed out after 150 ms',
    });
  });

  it('fails closed on a provider error without its body', async () => {
    server.on('POST', path, { status: 500, json: { error: { message: 'BODY-DETAIL-xyz' } } });
    const verdict = await classifyTopic(model(), { topic, input: 'x', timeoutMs: 5000 });
    expect(verdict).toMatchObject({
      on_topic: false,
      failed: true,
      reason: 'gate failed: provider_unavailable',
    });
    expect(JSON.stringify(verdict)).not.toContain('BODY-DETAIL');
  });
});
