import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { ParleyClient, ParleyEvent } from '../src/client/index.js';
import { InputCard, type InputRequest } from '../web/src/components/InputCard.js';
import { emptyConversation, reduce } from '../web/src/conversation/model.js';

// The web app's input cards for the interruptions (reconciliation, external_auth) and for
// requests with a deadline, rendered to markup. Type-checked with the web app
// (web/tsconfig.json: DOM types, bundler resolution), not with the server's
// tsconfig.check.json.

describe('the web app’s interruption cards', () => {
  const client = {} as ParleyClient;
  const card = (request: Partial<InputRequest>) =>
    renderToStaticMarkup(
      createElement(InputCard, {
        client,
        agent: undefined,
        request: {
          sessionId: 's1',
          requestId: 'req_1',
          inputKind: 'approval',
          expectedSequence: 3,
          ...request,
        },
      }),
    );

  it('asks "Did it happen? Yes / No" for a reconciliation, with the call', () => {
    const html = card({
      inputKind: 'reconciliation',
      tool: 'pay',
      arguments: { amount: 12 },
      prompt: 'Did this call take effect?',
    });
    expect(html).toContain('Did it happen?');
    expect(html).toContain('&quot;amount&quot;: 12');
    expect(html).toMatch(/>Yes<\/button>/);
    expect(html).toMatch(/>No<\/button>/);
  });

  it('links to where access is granted for an external_auth, web pages only', () => {
    const html = card({
      inputKind: 'external_auth',
      tool: 'mail',
      provider: 'mailhub',
      url: 'https://auth.example/authorize?x=1',
    });
    expect(html).toContain('href="https://auth.example/authorize?x=1"');
    expect(html).toContain('Grant access to mailhub');
    expect(html).toContain('aria-label="Credential reference"');
    const script = card({
      inputKind: 'external_auth',
      provider: 'evil',
      url: 'javascript:alert(1)',
    });
    expect(script).not.toContain('href=');
    expect(script).not.toContain('javascript:');
  });

  it('keeps provider and url from the event in the conversation', () => {
    const state = [
      {
        sequence: 3,
        at: '',
        type: 'input_required',
        turn_id: 't1',
        request_id: 'r1',
        kind: 'external_auth',
        call_id: 'c1',
        tool: 'mail',
        provider: 'mailhub',
        url: 'https://auth.example/a',
      },
    ].reduce(
      (current, event) => reduce(current, event as unknown as ParleyEvent),
      emptyConversation,
    );
    expect(state.items.at(-1)).toMatchObject({
      kind: 'input',
      inputKind: 'external_auth',
      provider: 'mailhub',
      url: 'https://auth.example/a',
    });
  });
});

describe('the web app’s cards for a request with a deadline', () => {
  const client = {} as ParleyClient;
  const card = (request: Partial<InputRequest>) =>
    renderToStaticMarkup(
      createElement(InputCard, {
        client,
        agent: undefined,
        request: {
          sessionId: 's1',
          requestId: 'req_1',
          inputKind: 'approval',
          expectedSequence: 3,
          deadlineAt: '2099-01-01T00:00:00.000Z',
          ...request,
        },
      }),
    );

  it('says what happens at the deadline, for each kind', () => {
    expect(card({})).toContain('then its default applies');
    expect(card({ inputKind: 'question', prompt: 'Which?' })).toContain(
      'then the agent goes on without an answer',
    );
    expect(card({ inputKind: 'budget_extension' })).toContain('then it counts as refused');
  });

  it('says how a question or an extension its deadline resolved ended', () => {
    const timedOut = { approved: false, actor: 'system:timeout', timedOut: true };
    expect(card({ inputKind: 'question', resolved: timedOut })).toContain(
      'Nobody answered in time<',
    );
    expect(card({ inputKind: 'budget_extension', resolved: timedOut })).toContain(
      'Nobody answered in time: refused',
    );
  });
});
