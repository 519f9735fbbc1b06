import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelRegistry } from '../src/providers/registry.js';
import { streamStep } from '../src/runtime/modelStep.js';
import {
  buildModelPrompt,
  estimate,
  orphanText,
  portableCallId,
  type HistoryTurn,
  type PromptRequest,
} from '../src/runtime/prompt.js';
import { ProviderServer } from './support/providerServer.js';
import { fixtureEnv, kindCases, kindConfig } from './support/providerKinds.js';

const image = (id: string) => ({
  attachmentId: id,
  mediaType: 'image/png',
  bytes: 1234,
  data: new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
});

function chatTurn(index: number, size = 400): HistoryTurn {
  return {
    entries: [
      { kind: 'user', text: `q${index} ${'x'.repeat(size)}` },
      { kind: 'assistant', text: `a${index} ${'y'.repeat(size)}` },
    ],
  };
}

function toolTurn(index: number): HistoryTurn {
  return {
    entries: [
      { kind: 'user', text: `what time is it? (${index})` },
      { kind: 'assistant', text: 'Let me look.' },
      {
        kind: 'tool_call',
        callId: `toolu_${index}`,
        tool: 'clock',
        arguments: { timezone: 'UTC' },
      },
      {
        kind: 'tool_result',
        callId: `toolu_${index}`,
        tool: 'clock',
        ok: true,
        result: { utc: '12:00' },
      },
      { kind: 'assistant', text: 'It is noon.' },
    ],
  };
}

function request(overrides: Partial<PromptRequest> = {}): PromptRequest {
  return {
    instructions: 'You are terse.',
    history: [],
    burst: { text: 'and now?', attachments: [] },
    model: { contextWindow: 100_000, maxOutputTokens: 8_000, vision: true },
    agent: { vision: 'auto', maxOutputTokens: null },
    ...overrides,
  };
}

/** Every tool call in a prompt is answered by the very next message. */
function assertNoOrphans(prompt: LanguageModelV3Prompt): void {
  prompt.forEach((message, index) => {
    if (message.role !== 'assistant') return;
    const calls = message.content.filter((part) => part.type === 'tool-call');
    if (calls.length === 0) return;
    const next = prompt[index + 1];
    expect(next?.role).toBe('tool');
    const answered = (next?.content as { toolCallId: string }[]).map((part) => part.toolCallId);
    expect(answered).toEqual(calls.map((call) => call.toolCallId));
  });
}

const texts = (prompt: LanguageModelV3Prompt) =>
  prompt.map((message) =>
    typeof message.content === 'string'
      ? message.content
      : message.content.map((part) => ('text' in part ? part.text : part.type)).join('|'),
  );

describe('prompt assembly (pure)', () => {
  it('puts the instructions first, then the history in order, then the burst', () => {
    const built = buildModelPrompt(request({ history: [chatTurn(1, 5), chatTurn(2, 5)] }));
    expect(built.prompt.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
    ]);
    expect(texts(built.prompt)[0]).toBe('You are terse.');
    expect(texts(built.prompt)[1]).toMatch(/^q1/);
    expect(texts(built.prompt)[5]).toBe('and now?');
    expect(built).toMatchObject({ keptTurns: 2, droppedTurns: 0 });
    expect(built.estimatedTokens).toBe(estimate(built.prompt));
  });

  it('keeps as many whole turns as fit, dropping the oldest, exactly at the window boundary', () => {
    const history = [1, 2, 3, 4, 5, 6].map((index) => chatTurn(index));
    let previous = -1;
    let transitions = 0;
    for (let window = 300; window <= 3_000; window++) {
      const built = buildModelPrompt(
        request({
          history,
          model: { contextWindow: window, maxOutputTokens: null, vision: false },
          agent: { vision: 'auto', maxOutputTokens: 100 },
        }),
      );
      expect(built.estimatedTokens).toBeLessThanOrEqual(
        Math.max(built.budgetTokens, estimate([built.prompt[0]!, built.prompt.at(-1)!])),
      );
      expect(built.keptTurns + built.droppedTurns).toBe(6);
      // the newest turns are the ones kept
      if (built.keptTurns > 0)
        expect(texts(built.prompt)[1]).toMatch(new RegExp(`^q${7 - built.keptTurns} `));
      expect(built.keptTurns).toBeGreaterThanOrEqual(previous);
      if (built.keptTurns > previous && previous >= 0) {
        transitions++;
        // one token less of window and this turn would not fit: the boundary is exact
        const smaller = buildModelPrompt(
          request({
            history,
            model: { contextWindow: window - 1, maxOutputTokens: null, vision: false },
            agent: { vision: 'auto', maxOutputTokens: 100 },
          }),
        );
        expect(smaller.keptTurns).toBe(built.keptTurns - 1);
        const turnCost = estimate(built.prompt.slice(1, 3));
        expect(smaller.estimatedTokens + turnCost).toBeGreaterThan(smaller.budgetTokens);
        expect(built.estimatedTokens).toBeLessThanOrEqual(built.budgetTokens);
      }
      previous = built.keptTurns;
    }
    expect(transitions).toBe(6);
  });

  it('never splits a tool call from its result, at any window', () => {
    const history = [toolTurn(1), chatTurn(2, 100), toolTurn(3), toolTurn(4)];
    const seen = new Set<number>();
    for (let window = 20; window <= 2_000; window += 3) {
      const built = buildModelPrompt(
        request({
          history,
          model: { contextWindow: window, maxOutputTokens: null, vision: false },
          agent: { vision: 'auto', maxOutputTokens: 10 },
        }),
      );
      assertNoOrphans(built.prompt);
      seen.add(built.keptTurns);
    }
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it('answers a call that has no result with a synthetic one saying what happened', () => {
    const history: HistoryTurn[] = [
      {
        entries: [
          { kind: 'user', text: 'do things' },
          { kind: 'tool_call', callId: 'c1', tool: 'clock', arguments: {}, outcome: 'cancelled' },
          {
            kind: 'tool_call',
            callId: 'c2',
            tool: 'calculator',
            arguments: { expression: '1' },
            outcome: 'superseded',
          },
          { kind: 'tool_call', callId: 'c3', tool: 'shell', arguments: {}, outcome: 'rejected' },
          { kind: 'tool_call', callId: 'c4', tool: 'clock', arguments: {} },
          { kind: 'tool_result', callId: 'ghost', tool: 'clock', ok: true, result: 1 },
        ],
      },
    ];
    const built = buildModelPrompt(request({ history }));
    assertNoOrphans(built.prompt);
    const tool = built.prompt.find((message) => message.role === 'tool')!;
    expect(tool.content).toEqual([
      expect.objectContaining({
        toolCallId: 'c1',
        output: { type: 'error-text', value: orphanText('clock', 'cancelled') },
      }),
      expect.objectContaining({
        toolCallId: 'c2',
        output: {
          type: 'error-text',
          value: 'The call of calculator was superseded by a newer message; nothing ran.',
        },
      }),
      expect.objectContaining({
        toolCallId: 'c3',
        output: { type: 'error-text', value: 'The call of shell was rejected; nothing ran.' },
      }),
      expect.objectContaining({
        toolCallId: 'c4',
        output: {
          type: 'error-text',
          value: 'The call of clock was interrupted; its result is unknown.',
        },
      }),
    ]);
    // a result whose call is gone is dropped, not sent dangling
    expect(JSON.stringify(built.prompt)).not.toContain('ghost');
  });

  it('sends images only to a vision model and as the agent allows; a note otherwise', () => {
    const history: HistoryTurn[] = [
      {
        entries: [
          { kind: 'user', text: 'old photo', attachments: [image('a1')] },
          { kind: 'assistant', text: 'ok' },
        ],
      },
      {
        entries: [
          { kind: 'user', text: 'last photo', attachments: [image('a2')] },
          { kind: 'assistant', text: 'ok' },
        ],
      },
    ];
    const burst = { text: 'and this one', attachments: [image('a3')] };
    const files = (built: ReturnType<typeof buildModelPrompt>) =>
      built.prompt.map((message) =>
        Array.isArray(message.content)
          ? message.content.filter((part) => part.type === 'file').length
          : 0,
      );
    const build = (vision: boolean | null, policy: 'auto' | 'always' | 'never') =>
      buildModelPrompt(
        request({
          history,
          burst,
          model: { contextWindow: 100_000, maxOutputTokens: null, vision },
          agent: { vision: policy, maxOutputTokens: null },
        }),
      );

    // auto: the turn carrying them (the burst) and the next one (the last history turn)
    const auto = build(true, 'auto');
    expect(files(auto)).toEqual([0, 0, 0, 1, 0, 1]);
    expect(auto.imagesSent).toBe(2);
    expect(texts(auto.prompt)[1]).toContain(
      '[An image was attached (image/png, 1234 bytes); it is not shown to you.]',
    );
    expect(files(build(true, 'always'))).toEqual([0, 1, 0, 1, 0, 1]);
    for (const [vision, policy] of [
      [false, 'auto'],
      [false, 'always'],
      [true, 'never'],
      [null, 'auto'],
    ] as const) {
      const built = build(vision, policy);
      expect(built.imagesSent).toBe(0);
      expect(texts(built.prompt)[5]).toBe(
        'and this one\n[An image was attached (image/png, 1234 bytes); it is not shown to you.]',
      );
    }
    // an operator's `always` vouches for a model the catalog knows nothing about
    expect(build(null, 'always').imagesSent).toBe(3);
  });

  it('halves the history budget for the retry after a context_length refusal', () => {
    const history = [1, 2, 3, 4, 5, 6, 7, 8].map((index) => chatTurn(index));
    const model = { contextWindow: 2_000, maxOutputTokens: null, vision: false };
    const normal = buildModelPrompt(request({ history, model }));
    const tighter = buildModelPrompt(request({ history, model, tighter: true }));
    expect(tighter.budgetTokens).toBe(Math.floor(normal.budgetTokens / 2));
    expect(tighter.keptTurns).toBeLessThan(normal.keptTurns);
    expect(tighter.estimatedTokens).toBeLessThanOrEqual(tighter.budgetTokens);
  });

  it('keeps the instructions and the burst even when they alone exceed the window', () => {
    const built = buildModelPrompt(
      request({
        history: [chatTurn(1)],
        burst: { text: 'z'.repeat(20_000), attachments: [] },
        model: { contextWindow: 1_000, maxOutputTokens: null, vision: false },
      }),
    );
    expect(built.keptTurns).toBe(0);
    expect(built.prompt.map((message) => message.role)).toEqual(['system', 'user']);
    expect(built.estimatedTokens).toBeGreaterThan(built.budgetTokens);
  });

  it('rewrites call ids to what every provider accepts, consistently', () => {
    expect(portableCallId('toolu_01A')).toBe('toolu_01A');
    expect(portableCallId('functions.clock:0')).toBe('functions_clock_0');
    expect(portableCallId('x'.repeat(100))).toHaveLength(64);
    expect(portableCallId('')).toBe('call');
  });
});

describe('a conversation moving from an Anthropic-shaped history to another provider', () => {
  let server: ProviderServer;
  beforeAll(async () => {
    server = await ProviderServer.start();
  });
  afterAll(async () => {
    await server.close();
  });

  // Calls as Anthropic made them (toolu_ ids), one of them left without a result by a
  // crash, and an id from a gateway with characters Anthropic refuses.
  const history: HistoryTurn[] = [
    {
      entries: [
        { kind: 'user', text: 'time in Paris and 6*7?' },
        { kind: 'assistant', text: 'Let me check.' },
        {
          kind: 'tool_call',
          callId: 'toolu_01A',
          tool: 'clock',
          arguments: { timezone: 'Europe/Paris' },
        },
        {
          kind: 'tool_call',
          callId: 'toolu_01B',
          tool: 'calculator',
          arguments: { expression: '6*7' },
        },
        {
          kind: 'tool_result',
          callId: 'toolu_01A',
          tool: 'clock',
          ok: true,
          result: { local: '14:00' },
        },
        { kind: 'assistant', text: 'It is 14:00 in Paris.' },
      ],
    },
    {
      entries: [
        { kind: 'user', text: 'again' },
        { kind: 'tool_call', callId: 'functions.clock:7', tool: 'clock', arguments: {} },
        {
          kind: 'tool_result',
          callId: 'functions.clock:7',
          tool: 'clock',
          ok: false,
          error: 'clock failed',
        },
        { kind: 'assistant', text: 'Sorry, the clock failed.' },
      ],
    },
  ];
  const built = buildModelPrompt(request({ history }));

  it('is a valid Chat Completions request for OpenAI: every tool call answered by its id', async () => {
    const kindCase = kindCases.find((candidate) => candidate.name === 'openai (api: chat)')!;
    server.on('POST', '/v1/chat/completions', { stream: 'openai-chat/text.txt' });
    const model = createModelRegistry(kindConfig(kindCase, server.url), fixtureEnv)(
      'fixture',
      kindCase.model,
    );
    const result = await streamStep(
      model,
      built.prompt,
      { push: () => {} },
      new AbortController().signal,
    );
    expect(result.text).toBe('Hello, world!');
    const messages = JSON.parse(server.requests.at(-1)!.body).messages as any[];
    const calls = messages
      .flatMap((message) => message.tool_calls ?? [])
      .map((call: any) => call.id);
    const answers = messages
      .filter((message) => message.role === 'tool')
      .map((message) => message.tool_call_id);
    expect(calls).toEqual(['toolu_01A', 'toolu_01B', 'functions_clock_7']);
    expect(answers).toEqual(calls);
    const orphan = messages.find((message) => message.tool_call_id === 'toolu_01B');
    expect(orphan.content).toContain('interrupted');
    messages.forEach((message, index) => {
      if (message.tool_calls) expect(messages[index + 1].role).toBe('tool');
    });
  });

  it('is a valid Messages request for Anthropic: tool_use followed by its tool_result', async () => {
    const kindCase = kindCases.find((candidate) => candidate.kind === 'anthropic')!;
    server.on('POST', '/v1/messages', { stream: 'anthropic/text.txt' });
    const model = createModelRegistry(kindConfig(kindCase, server.url), fixtureEnv)(
      'fixture',
      kindCase.model,
    );
    await streamStep(model, built.prompt, { push: () => {} }, new AbortController().signal);
    const messages = JSON.parse(server.requests.at(-1)!.body).messages as any[];
    messages.forEach((message, index) => {
      const uses = Array.isArray(message.content)
        ? message.content.filter((part: any) => part.type === 'tool_use')
        : [];
      if (uses.length === 0) return;
      const results = messages[index + 1].content.filter(
        (part: any) => part.type === 'tool_result',
      );
      expect(results.map((part: any) => part.tool_use_id)).toEqual(
        uses.map((part: any) => part.id),
      );
      for (const use of uses) expect(use.id).toMatch(/^[A-Za-z0-9_-]+$/);
    });
  });
});
