import { describe, expect, it } from 'vitest';
import { checkBudgets } from '../scripts/soak/checker/budgets.js';
import { Findings, Journal } from '../scripts/soak/checker/findings.js';
import type { EventRow } from '../scripts/soak/checker/snapshot.js';

// The soak's rule for budget extensions, on made-up journals: a grant that took effect
// raises the budget the turn's next request or stop names; one that was lost does not.

const session = 's1';
let sequence = 0;
const event = (type: string, payload: Record<string, unknown>): EventRow => ({
  session_id: session,
  sequence: ++sequence,
  type,
  turn_id: 't1',
  payload,
});
const ask = (id: string, used: number) =>
  event('input_required', {
    kind: 'budget_extension',
    request_id: id,
    prompt: `the turn used its ${used} tool calls. Allow it to continue?`,
  });
const done = (content: string) => event('done', { turn_ids: ['t1'], final_message: { content } });

function check(events: EventRow[], approved: string[]): string[] {
  const requests = events
    .filter((row) => row.type === 'input_required')
    .map((row) => ({
      request_id: String(row.payload.request_id),
      session_id: session,
      turn_id: 't1',
      call_id: 'budget_1',
      kind: 'budget_extension',
      state: 'answered',
      approved: approved.includes(String(row.payload.request_id)),
    }));
  const snapshot = { events, requests, turns: [], sessions: [], messages: [], commands: [] };
  const findings = new Findings();
  checkBudgets(new Journal(snapshot), findings);
  return findings.violations.map((violation) => violation.check);
}

describe('the soak checker: budget extensions', () => {
  it('accepts a burst that needed two grants: each request names a larger budget', () => {
    expect(check([ask('r1', 3), ask('r2', 6), done('All done.')], ['r1', 'r2'])).toEqual([]);
  });

  it('finds a lost grant: the turn asks again at the budget it was given beyond', () => {
    expect(check([ask('r1', 3), ask('r2', 3), done('All done.')], ['r1', 'r2'])).toEqual([
      'approved extension resumes once',
    ]);
  });

  it('finds a lost grant in a stop at the old budget, not in one at a larger budget', () => {
    expect(
      check([ask('r1', 3), done('I stopped here: the turn used its 3 tool calls.')], ['r1']),
    ).toEqual(['approved extension resumes once']);
    expect(
      check(
        [ask('r1', 3), ask('r2', 6), done('I stopped here: the turn used its 6 tool calls.')],
        ['r1'],
      ),
    ).toEqual([]);
  });
});
