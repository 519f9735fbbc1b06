import { describe, expect, it } from 'vitest';
import { approvalButtonValue, type ApprovalCard } from '../src/adapters/delivery/content.js';
import { fold } from '../src/adapters/delivery/fold.js';
import { render } from '../src/adapters/delivery/render.js';
import { newEvent, type NewEvent, type ParleyEvent } from '../src/protocol/events.js';
import { argumentsDigest } from '../src/runtime/argumentsDigest.js';

// A chat platform's approval card (docs/governance.md, "Approvals that end"): it shows the
// request's deadline and what happens then, and its buttons carry the digest of the
// arguments it shows, so a press refers to exactly them.

const turn = 'turn_1';
const digest = argumentsDigest({ expression: '6*7' });
const deadline = '2026-01-01T01:00:00.000Z';

const wire = (events: NewEvent[]): ParleyEvent[] =>
  events.map(
    (event, index) =>
      ({
        type: event.type,
        sequence: index + 1,
        at: '2026-01-01T00:00:00.000Z',
        turn_id: event.turn_id ?? undefined,
        ...event.data,
      }) as ParleyEvent,
  );

let ids = 0;
function folded(events: NewEvent[]): ApprovalCard {
  const rows = { byId: new Map(), byRequest: new Map() };
  const result = fold({ openReplyId: null, typing: false }, wire(events), rows, () => {
    ids += 1;
    return `rep_${ids}`;
  });
  const card = [...result.touched].find((row) => row.kind === 'approval');
  return card?.content as ApprovalCard;
}

const required = (data: Record<string, unknown>) =>
  newEvent('input_required', turn, {
    request_id: 'req_1',
    call_id: 'c1',
    kind: 'approval',
    tool: 'calculator',
    arguments: { expression: '6*7' },
    arguments_digest: digest,
    ...data,
  });

const shown = (replyId: string, card: ApprovalCard) => JSON.stringify(render(replyId, card));

describe('a platform approval card', () => {
  it('shows the deadline and what applies then, for each kind that has one', () => {
    const approval = folded([required({ deadline_at: deadline })]);
    expect(approval).toMatchObject({ arguments_digest: digest, deadline_at: deadline });
    expect(shown('rep_a', approval)).toContain(
      'Answer by 2026-01-01 01:00 UTC: then its default applies.',
    );
    const question = folded([
      newEvent('input_required', turn, {
        request_id: 'req_2',
        call_id: 'c2',
        kind: 'question',
        prompt: 'Which colour?',
        deadline_at: deadline,
      }),
    ]);
    expect(shown('rep_q', question)).toContain('then the agent goes on without an answer');
    const extension = folded([
      newEvent('input_required', turn, {
        request_id: 'req_3',
        call_id: 'budget_1',
        kind: 'budget_extension',
        prompt: 'The turn used its 8 model steps. Allow it to continue?',
        deadline_at: deadline,
      }),
    ]);
    expect(shown('rep_b', extension)).toContain('then it counts as refused');
    // Without a deadline, nothing is said about one.
    expect(shown('rep_n', folded([required({})]))).not.toContain('Answer by');
  });

  it('says how a request its deadline resolved ended, and stops showing the deadline', () => {
    const card = folded([
      required({ deadline_at: deadline }),
      newEvent('input_resolved', turn, {
        request_id: 'req_1',
        approved: false,
        actor: { user: 'system:timeout', tenant: 'acme' },
        state: 'timeout',
      }),
    ]);
    const text = shown('rep_t', card);
    expect(text).toContain('Not answered in time: rejected (its default)');
    expect(text).not.toContain('Answer by');
    expect(text).not.toContain('p.a');
  });

  it('carries the first digits of the arguments’ digest in its buttons, within Telegram’s 64 bytes', () => {
    const card = folded([required({})]);
    const replyId = 'rep_01J0000000000000000000000A';
    const value = approvalButtonValue(replyId, card);
    expect(value).toBe(`${replyId}.${digest.slice(0, 8)}`);
    const text = shown(replyId, card);
    expect(text).toContain(JSON.stringify(value));
    // The Telegram SDK sends `chat:{"a":"p.a","v":"<value>"}` as the callback data.
    expect(Buffer.byteLength(`chat:${JSON.stringify({ a: 'p.a', v: value })}`)).toBeLessThanOrEqual(
      64,
    );
    // A request without a digest (a card folded before cards carried one) keeps the row id.
    const { arguments_digest: _digest, ...older } = card;
    expect(approvalButtonValue(replyId, older)).toBe(replyId);
  });
});
