import { describe, expect, it } from 'vitest';
import { createDemoModel } from '../src/providers/demo.js';
import { evaluateIteration, type EvaluationRequest } from '../src/providers/evaluator.js';

// The evaluation step of a loop mission, played by the demo model (CONFIG.md: `/decide`
// in the loop prompt), through the same forced tool call a real provider gets.
const model = createDemoModel({ modelId: 'echo', delayMs: 0 });

function request(
  loopPrompt: string,
  iteration: number,
  note: string | null = null,
): EvaluationRequest {
  return {
    instructions: 'You are a helpful assistant.',
    mission: 'Tidy the inbox.',
    iteration,
    maxIterations: 10,
    reply: 'You said: Tidy the inbox.',
    loopPrompt,
    note,
    timeoutMs: 5000,
  };
}

describe('evaluateIteration on the demo model', () => {
  it('continues until iteration N, then completes', async () => {
    const first = await evaluateIteration(model, request('Done yet? /decide continue:3', 1));
    expect(first).toMatchObject({ kind: 'decided', decision: 'continue' });
    const third = await evaluateIteration(model, request('Done yet? /decide continue:3', 3));
    expect(third).toMatchObject({ kind: 'decided', decision: 'complete' });
    expect(third.usage?.inputTokens).toBeGreaterThan(0);
  });

  it('answers blocked, complete without /decide, and garbage outside the schema', async () => {
    expect(await evaluateIteration(model, request('/decide blocked', 1))).toMatchObject({
      kind: 'decided',
      decision: 'blocked',
    });
    expect(await evaluateIteration(model, request('Is it done?', 1))).toMatchObject({
      kind: 'decided',
      decision: 'complete',
    });
    expect(await evaluateIteration(model, request('/decide garbage', 1))).toMatchObject({
      kind: 'garbage',
    });
  });

  it("reads a person's note after the loop prompt", async () => {
    const unblocked = await evaluateIteration(
      model,
      request('/decide blocked', 2, 'the key is in place now /decide complete'),
    );
    expect(unblocked).toMatchObject({ kind: 'decided', decision: 'complete' });
  });

  it('reports a provider failure as such, not as a decision', async () => {
    const failing = await evaluateIteration(model, {
      ...request('/decide continue:3', 1),
      reply: '/fail permanent',
    });
    expect(failing.kind).toBe('failed');
    if (failing.kind === 'failed') expect(failing.failure.isRetryable).toBe(false);
  });
});

describe('the demo model with /answer in its instructions', () => {
  it('replies that text to a turn', async () => {
    const { stream } = await model.doStream({
      prompt: [
        { role: 'system', content: 'You review requests.\n/answer APPROVE it is harmless' },
        { role: 'user', content: [{ type: 'text', text: 'May I run the calculator?' }] },
      ],
    });
    let text = '';
    for await (const part of stream) if (part.type === 'text-delta') text += part.delta;
    expect(text).toBe('APPROVE it is harmless');
  });
});
