import { describe, expect, it } from 'vitest';
import { CompletionChunks } from '../src/api/openai/chatCompletion.js';
import { ResponseFold, type StreamEvent } from '../src/api/openai/responseFold.js';
import type { ParleyEvent } from '../src/protocol/events.js';

// A streamed chat completion cannot take text back: what it makes of a turn whose first
// attempt's text was withdrawn (a worker died mid-reply, another ran the step again).

const turn = 't1';
const at = '2026-12-03T00:00:00.000Z';
let sequence = 0;
const event = (body: Record<string, unknown>) =>
  ({ sequence: ++sequence, at, turn_id: turn, ...body }) as unknown as ParleyEvent;

const journal = (): ParleyEvent[] => [
  event({ type: 'turn_started', attempt: 1, turn_ids: [turn] }),
  event({ type: 'text_delta', delta: 'You said' }),
  event({ type: 'text_delta', delta: ': hel' }),
  // The first worker died; the next one withdraws its text and runs the step again.
  event({ type: 'attempt_reset', attempt: 1 }),
  event({ type: 'turn_started', attempt: 2, turn_ids: [turn] }),
  event({ type: 'text_delta', delta: 'You said: hello' }),
  event({
    type: 'done',
    turn_ids: [turn],
    final_message: { id: 'm1', role: 'assistant', content: 'You said: hello' },
  }),
];

function folded(events: ParleyEvent[]): StreamEvent[] {
  const fold = new ResponseFold({
    turnId: turn,
    sessionId: 's1',
    model: 'default',
    createdAt: 0,
    background: false,
    instructions: null,
    metadata: {},
    previousResponseId: null,
  });
  for (const item of events) fold.apply(item);
  return fold.events;
}

const identity = { id: 'chatcmpl_t1', model: 'default', created: 0 };
const textOf = (chunks: unknown[]) =>
  chunks
    .map((chunk) => (chunk as { choices: { delta: { content?: string } }[] }).choices[0]?.delta)
    .map((delta) => delta?.content ?? '')
    .join('');

describe('a streamed completion of a turn whose first attempt was withdrawn', () => {
  it('sends only the retried text when the withdrawal is in the same read (a replay)', () => {
    const made = new CompletionChunks(identity).of(folded(journal()));
    expect(made.broken).toBeNull();
    expect(textOf(made.chunks)).toBe('You said: hello');
  });

  it('ends with reply_withdrawn when text already sent is withdrawn (live)', () => {
    const all = folded(journal());
    // What the first read folded: up to the first attempt's text.
    const cut = all.findIndex((item) => item.type === 'response.output_item.done');
    const chunks = new CompletionChunks(identity);
    const first = chunks.of(all.slice(0, cut));
    expect(first.broken).toBeNull();
    expect(textOf(first.chunks)).toBe('You said: hel');
    const second = chunks.of(all.slice(cut));
    expect(second.broken).toMatch(/same Idempotency-Key/);
    expect(textOf(second.chunks)).toBe('');
  });

  it('sends a plain turn whole, ending with stop', () => {
    const plain = journal().filter(
      (item) =>
        !(item.type === 'text_delta' && item.delta !== 'You said: hello') &&
        item.type !== 'attempt_reset' &&
        !(item.type === 'turn_started' && item.attempt === 2),
    );
    const made = new CompletionChunks(identity).of(folded(plain));
    expect(made.broken).toBeNull();
    expect(textOf(made.chunks)).toBe('You said: hello');
    const last = made.chunks.at(-1) as { choices: { finish_reason: string }[] };
    expect(last.choices[0]?.finish_reason).toBe('stop');
  });
});
