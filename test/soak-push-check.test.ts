import { describe, expect, it } from 'vitest';
import type { PushReceipt } from '../scripts/soak/a2aPush.js';
import { checkPushes, type PushRows } from '../scripts/soak/checker/a2aPush.js';
import { Findings } from '../scripts/soak/checker/findings.js';
import type { PushRecord } from '../scripts/soak/ledger.js';

// The soak's rules for A2A push notifications, on made-up configs, deliveries and POSTs:
// each notification accepted under its id, the same body on every retry, journal order
// per config, and every task sent with a config told its end with the reply.

const record: PushRecord = { label: 'soaka1', taskId: 'task1', token: 'soak-soaka1', reply: 'hi' };
const rows = (finished = true): PushRows => ({
  configs: [{ push_id: 'p1', task_id: 'task1', token: 'soak-soaka1', finished }],
  deliveries: [
    {
      delivery_id: 'd1',
      push_id: 'p1',
      sequence: 3,
      state: 'delivered',
      attempts: 1,
      last_error: null,
    },
    {
      delivery_id: 'd2',
      push_id: 'p1',
      sequence: 9,
      state: 'delivered',
      attempts: 2,
      last_error: null,
    },
  ],
});
const post = (id: string, state: string, text = '', status = 204, extra = {}): PushReceipt => ({
  id,
  token: 'soak-soaka1',
  taskId: 'task1',
  state,
  text,
  body: `${id}:${state}:${text}`,
  status,
  ...extra,
});
const working = post('d1', 'TASK_STATE_WORKING');
const completed = post('d2', 'TASK_STATE_COMPLETED', 'hi');

function check(receipts: PushReceipt[], pushRows = rows(), invalid: string[] = []) {
  const findings = new Findings();
  const figures = checkPushes([record], pushRows, { receipts, invalid }, findings);
  return { figures, found: findings.violations.map((v) => `${v.category}: ${v.check}`) };
}

describe('the soak checker: A2A push notifications', () => {
  it('passes notifications each accepted in order, retries and redeliveries alike', () => {
    const refused = post('d2', 'TASK_STATE_COMPLETED', 'hi', 503);
    const { figures, found } = check([working, refused, completed, working]);
    expect(found).toEqual([]);
    expect(figures).toEqual({ configs: 1, deliveries: 2, receipts: 4, duplicates: 1 });
  });

  it('finds a notification never accepted, or dead-lettered', () => {
    expect(check([working]).found).toEqual([
      'lost: a2a push delivered',
      'lost: a2a push delivered',
    ]);
    const dead = rows();
    dead.deliveries[0] = { ...(dead.deliveries[0] as PushRows['deliveries'][0]), state: 'dead' };
    expect(check([working, completed], dead).found).toEqual(['lost: a2a push delivered']);
  });

  it('finds a config that never reached its task end', () => {
    expect(check([working, completed], rows(false)).found).toEqual(['lost: a2a push delivered']);
  });

  it('finds a retry with another body, another token, a POST of no notification', () => {
    const changed = { ...completed, body: 'other' };
    expect(check([working, completed, changed]).found).toEqual([
      'mismatch: a2a push duplicates carry the same id',
    ]);
    expect(check([working, { ...completed, token: 'soak-other' }]).found).toEqual([
      'mismatch: a2a push duplicates carry the same id',
    ]);
    expect(check([working, completed, post('d9', 'TASK_STATE_WORKING')]).found).toEqual([
      'mismatch: a2a push duplicates carry the same id',
    ]);
    expect(check([working, completed], rows(), ['{}']).found).toEqual([
      'mismatch: a2a push duplicates carry the same id',
    ]);
  });

  it('finds notifications first accepted out of order, and an end without the reply', () => {
    expect(check([completed, working]).found).toEqual([
      'order: a2a push order per config',
      'lost: a2a push delivered',
    ]);
    expect(check([working, post('d2', 'TASK_STATE_COMPLETED', 'hello')]).found).toEqual([
      'mismatch: a2a push duplicates carry the same id',
    ]);
  });
});
