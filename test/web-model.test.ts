import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { ParleyEvent } from '../src/client/index.js';
import {
  emptyConversation,
  fromTranscript,
  reduce,
  type ConversationState,
} from '../web/src/conversation/model.js';
import { Markdown } from '../web/src/markdown.js';

// Component-level tests of the web app's two pure parts: the conversation reducer (the
// journal → the timeline) and the markdown renderer (text → React elements, never HTML).
const at = (sequence: number, event: Record<string, unknown>) =>
  ({ sequence, at: '', ...event }) as unknown as ParleyEvent;

const apply = (events: ParleyEvent[], state: ConversationState = emptyConversation) =>
  events.reduce(reduce, state);

const message = (sequence: number, turnId: string, content: string, author = 'ann') =>
  at(sequence, {
    type: 'message',
    turn_id: turnId,
    message: { id: `m${sequence}`, role: 'user', author, content },
  });

describe('the conversation reducer', () => {
  it('streams a reply into one text item and ends it with the final message', () => {
    const state = apply([
      message(1, 't1', 'hi'),
      at(2, { type: 'turn_started', turn_id: 't1', attempt: 1, turn_ids: ['t1'] }),
      at(3, { type: 'text_delta', turn_id: 't1', delta: 'You said: ' }),
      at(4, { type: 'text_delta', turn_id: 't1', delta: 'hi' }),
      at(5, { type: 'usage', turn_id: 't1', input_tokens: 3, output_tokens: 3, cost_usd: 0 }),
      at(6, {
        type: 'done',
        turn_id: 't1',
        turn_ids: ['t1'],
        final_message: { id: 'a1', role: 'assistant', content: 'You said: hi' },
      }),
    ]);
    const texts = state.items.filter((item) => item.kind === 'text');
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatchObject({ text: 'You said: hi' });
    expect(state.openTurns).toEqual([]);
    expect(state.activeTurn).toBeNull();
    expect(state.usage.t1).toEqual({ input_tokens: 3, output_tokens: 3, cost_usd: 0 });
  });

  it('ignores events at or below its cursor: a replay never shows anything twice', () => {
    const events = [
      message(1, 't1', 'hi'),
      at(2, { type: 'turn_started', turn_id: 't1', attempt: 1, turn_ids: ['t1'] }),
      at(3, { type: 'text_delta', turn_id: 't1', delta: 'You said' }),
    ];
    const once = apply(events);
    expect(apply(events, once)).toBe(once);
  });

  it('drops the abandoned attempt’s partial text on attempt_reset', () => {
    const state = apply([
      message(1, 't1', 'hello'),
      at(2, { type: 'turn_started', turn_id: 't1', attempt: 1, turn_ids: ['t1'] }),
      at(3, { type: 'text_delta', turn_id: 't1', delta: 'You said: hel' }),
      at(4, { type: 'attempt_reset', turn_id: 't1', attempt: 1 }),
      at(5, { type: 'turn_started', turn_id: 't1', attempt: 2, turn_ids: ['t1'] }),
      at(6, { type: 'text_delta', turn_id: 't1', delta: 'You said: hello' }),
    ]);
    const texts = state.items.filter((item) => item.kind === 'text');
    expect(texts.map((item) => (item as { text: string }).text)).toEqual(['You said: hello']);
  });

  it('shows a stalled step, and still drops its text when the retry resets the attempt', () => {
    const state = apply([
      message(1, 't1', 'hello'),
      at(2, { type: 'turn_started', turn_id: 't1', attempt: 1, turn_ids: ['t1'] }),
      at(3, { type: 'text_delta', turn_id: 't1', delta: 'You said: ' }),
      at(4, {
        type: 'stalled',
        turn_id: 't1',
        what: 'model_stream',
        since_ms: 1000,
        action: 'retry',
      }),
      at(5, { type: 'attempt_reset', turn_id: 't1', attempt: 1 }),
      at(6, { type: 'turn_started', turn_id: 't1', attempt: 2, turn_ids: ['t1'] }),
      at(7, { type: 'text_delta', turn_id: 't1', delta: 'You said: hello' }),
    ]);
    expect(state.items.filter((item) => item.kind === 'stall')).toMatchObject([
      { what: 'model_stream', action: 'retry', turnId: 't1' },
    ]);
    const texts = state.items.filter((item) => item.kind === 'text');
    expect(texts.map((item) => (item as { text: string }).text)).toEqual(['You said: hello']);
  });

  it('shows a change of the session state, and whether it completed the session', () => {
    const state = apply([
      message(1, 't1', 'done?'),
      at(2, { type: 'turn_started', turn_id: 't1', attempt: 1, turn_ids: ['t1'] }),
      at(3, { type: 'state_changed', turn_id: 't1', data: { step: 2 }, by: 'tool' }),
      at(4, { type: 'state_changed', turn_id: 't1', data: {}, completed: true, by: 'option' }),
    ]);
    expect(state.items.filter((item) => item.kind === 'state')).toMatchObject([
      { by: 'tool', completed: false },
      { by: 'option', completed: true },
    ]);
  });

  it('keeps the text of a step that ended in a tool call across a reset', () => {
    const state = apply([
      message(1, 't1', 'go'),
      at(2, { type: 'turn_started', turn_id: 't1', attempt: 1, turn_ids: ['t1'] }),
      at(3, { type: 'text_delta', turn_id: 't1', delta: 'Let me check.' }),
      at(4, { type: 'tool_call', turn_id: 't1', call_id: 'c1', tool: 'clock', arguments: {} }),
      at(5, {
        type: 'tool_result',
        turn_id: 't1',
        call_id: 'c1',
        tool: 'clock',
        ok: true,
        result: { now: 'x' },
      }),
      at(6, { type: 'text_delta', turn_id: 't1', delta: 'It is' }),
      at(7, { type: 'attempt_reset', turn_id: 't1', attempt: 1 }),
    ]);
    const texts = state.items.filter((item) => item.kind === 'text');
    expect(texts.map((item) => (item as { text: string }).text)).toEqual(['Let me check.']);
    const tool = state.items.find((item) => item.kind === 'tool');
    expect(tool).toMatchObject({ tool: 'clock', result: { ok: true, value: { now: 'x' } } });
  });

  it('replaces streamed text by a different final message (completion_text)', () => {
    const state = apply([
      message(1, 't1', 'hi'),
      at(2, { type: 'text_delta', turn_id: 't1', delta: 'raw reply' }),
      at(3, {
        type: 'done',
        turn_id: 't1',
        turn_ids: ['t1'],
        final_message: { id: 'a1', role: 'assistant', content: 'Thanks for your message.' },
      }),
    ]);
    const texts = state.items.filter((item) => item.kind === 'text');
    expect(texts.map((item) => (item as { text: string }).text)).toEqual([
      'Thanks for your message.',
    ]);
  });

  it('tracks input requests, their resolution and option choices', () => {
    const state = apply([
      message(1, 't1', 'x'),
      at(2, { type: 'turn_started', turn_id: 't1', attempt: 1, turn_ids: ['t1'] }),
      at(3, {
        type: 'input_required',
        turn_id: 't1',
        request_id: 'r1',
        kind: 'approval',
        call_id: 'c1',
        tool: 'calculator',
        arguments: { expression: '1+1' },
      }),
    ]);
    expect(state.waiting).toBe(true);
    expect(state.items.at(-1)).toMatchObject({ kind: 'input', expectedSequence: 3 });
    const resolved = apply(
      [
        at(4, {
          type: 'input_resolved',
          turn_id: 't1',
          request_id: 'r1',
          approved: false,
          actor: { user: 'bo', tenant: 'x' },
        }),
      ],
      state,
    );
    expect(resolved.items.at(-1)).toMatchObject({ resolved: { approved: false, actor: 'bo' } });
    const expired = apply(
      [
        at(4, {
          type: 'input_resolved',
          turn_id: 't1',
          request_id: 'r1',
          approved: false,
          actor: null,
          expired: 'superseded',
        }),
      ],
      state,
    );
    expect(expired.items.at(-1)).toMatchObject({
      resolved: { actor: null, expired: 'superseded' },
    });
    const pressed = apply([
      at(1, {
        type: 'message',
        turn_id: 't9',
        message: {
          id: 'm',
          role: 'user',
          author: 'ann',
          content: '',
          option: { request_id: 'o1', value: 'b' },
        },
      }),
    ]);
    expect(pressed.chosen).toEqual({ o1: 'b' });
  });

  it('settles every turn a cancel or an error names, and rebuilds from a transcript', () => {
    const state = apply([
      message(1, 't1', 'a'),
      message(2, 't2', 'b'),
      at(3, { type: 'turn_started', turn_id: 't1', attempt: 1, turn_ids: ['t1', 't2'] }),
      at(4, { type: 'cancelled', turn_id: 't1', turn_ids: ['t1', 't2'], actor: { user: 'ann' } }),
    ]);
    expect(state.openTurns).toEqual([]);
    expect(state.items.at(-1)).toMatchObject({
      kind: 'outcome',
      outcome: 'cancelled',
      actor: 'ann',
    });
    const rebuilt = fromTranscript(
      [
        {
          id: 'a',
          role: 'assistant',
          author: 'bot',
          content: 'yes',
          turn_id: 't1',
          sequence: 9,
          created_at: '',
        },
        {
          id: 'u',
          role: 'user',
          author: 'ann',
          content: 'q',
          turn_id: 't1',
          sequence: 1,
          created_at: '',
        },
      ],
      12,
    );
    expect(rebuilt.cursor).toBe(12);
    expect(rebuilt.items.map((item) => item.kind)).toEqual(['message', 'text']);
  });
});

describe('the markdown renderer', () => {
  const html = (source: string) => renderToStaticMarkup(createElement(Markdown, { source }));

  it('renders raw HTML as text, never as elements', () => {
    const out = html('<img src=x onerror=alert(1)> and <script>alert(2)</script>');
    expect(out).not.toContain('<img');
    expect(out).not.toContain('<script');
    expect(out).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('renders code blocks, inline code, emphasis, lists and safe links', () => {
    const out = html(
      '# Title\n\nSome **bold**, *italic* and `a<b>`.\n\n```ts\nconst x = "<b>";\n```\n\n- one\n- two\n\n[ok](https://example.com) [bad](javascript:alert(1))',
    );
    expect(out).toContain('<h3>Title</h3>');
    expect(out).toContain('<strong>bold</strong>');
    expect(out).toContain('<em>italic</em>');
    expect(out).toContain('<code>a&lt;b&gt;</code>');
    expect(out).toContain(
      '<pre data-lang="ts"><code>const x = &quot;&lt;b&gt;&quot;;</code></pre>',
    );
    expect(out).toContain('<ul><li>one</li><li>two</li></ul>');
    expect(out).toContain('href="https://example.com"');
    expect(out).not.toContain('javascript:alert(1)"');
    expect(out).toContain('[bad](javascript:alert(1))');
  });

  it('does not take identifiers with underscores for emphasis', () => {
    expect(html('call window.__xss and snake_case_name')).not.toContain('<em>');
    expect(html('call window.__xss and snake_case_name')).not.toContain('<strong>');
  });
});
