import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import type { WebhookEvidence } from '../scripts/soak/checker/webhooks.js';
import { Ledger } from '../scripts/soak/ledger.js';
import { Random } from '../scripts/soak/random.js';
import {
  webhookConfig,
  webhookEvents,
  WebhookReceiver,
  type Receipt,
} from '../scripts/soak/webhooks.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// The soak checker's webhook rules (scripts/soak/checker/webhooks.ts) on what a real
// server delivered to the soak's own receiver (which answers some POSTs 503, so retries
// happen): the checker finds nothing; then each rule is broken in the database or in what
// the receiver recorded, and the checker must name it.

let server: TestServer;
let receiver: WebhookReceiver;
const sessions: string[] = [];

beforeAll(async () => {
  receiver = await new WebhookReceiver(new Random(23)).start();
  server = await startTestServer(
    {
      agents: { default: { model: 'demo/echo' } },
      webhooks: webhookConfig(receiver.url, 'CHECK_WEBHOOK_SECRET'),
    },
    { CHECK_WEBHOOK_SECRET: receiver.secret },
  );
  for (const [index, message] of ['one two', 'three four', 'five six'].entries()) {
    const body: Record<string, string> = { turn_id: `hook_${index}`, message };
    if (index === 1) body.session_id = sessions[0] as string;
    const answer = await request(server.url, 'POST', '/api/v1/chat/turns', body);
    expect(answer.status).toBe(202);
    if (!sessions.includes(answer.body.session_id)) sessions.push(answer.body.session_id);
  }
  await until(
    () =>
      server.db.query<{ open: number; events: number; delivered: number }>(
        `select (select count(*)::int from turns where state in ('queued', 'running')) as open,
                (select count(*)::int from events where type = any($1::text[])) as events,
                (select count(*)::int from webhook_deliveries where state = 'delivered')
                  as delivered`,
        [webhookEvents],
      ),
    (found) => found.rows[0]?.open === 0 && found.rows[0]?.events === found.rows[0]?.delivered,
    'every webhook delivered',
    90_000,
  );
}, 120_000);

afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

function evidence(change: (receipts: Receipt[]) => Receipt[] = (list) => list): WebhookEvidence {
  return {
    webhook: 'soak',
    events: webhookEvents,
    receipts: change([...receiver.receipts]),
    invalid: [],
  };
}

async function check(from: WebhookEvidence = evidence()) {
  return checkDatabase(server.db, new Ledger(), { webhooks: from });
}

async function expectFound(category: Category, check_: string, from?: WebhookEvidence) {
  const found = (await check(from)).findings.violations;
  expect(
    found.some((violation) => violation.category === category && violation.check === check_),
    `expected ${category}/${check_} among ${JSON.stringify(found)}`,
  ).toBe(true);
}

const acceptedOf = (sessionId: string) =>
  receiver.receipts.filter((receipt) => receipt.sessionId === sessionId && receipt.status < 300);

describe('the soak checker on webhooks a server delivered', () => {
  it('finds nothing, and counts deliveries and POSTs', async () => {
    const result = await check();
    expect(result.findings.violations).toEqual([]);
    // Three user messages, and a done per reply (the two messages of one session may be
    // answered by one reply).
    expect(result.webhooks?.deliveries).toBeGreaterThanOrEqual(5);
    expect(result.webhooks?.receipts).toBeGreaterThanOrEqual(result.webhooks?.deliveries ?? 0);
  });

  it('a delivery the receiver never accepted is lost', async () => {
    const [first] = acceptedOf(sessions[0] as string);
    await expectFound(
      'lost',
      'webhook delivered',
      evidence((list) => list.filter((receipt) => receipt.id !== first?.id)),
    );
  });

  it('a dead-lettered delivery is lost', async () => {
    const [first] = acceptedOf(sessions[0] as string);
    await server.db.query(`update webhook_deliveries set state = 'dead' where delivery_id = $1`, [
      first?.id,
    ]);
    try {
      await expectFound('lost', 'webhook delivered');
    } finally {
      await server.db.query(
        `update webhook_deliveries set state = 'delivered' where delivery_id = $1`,
        [first?.id],
      );
    }
  });

  it('an event with no delivery is lost', async () => {
    const removed = (
      await server.db.query<any>(
        `delete from webhook_deliveries where session_id = $1 and event_type = 'done'
          returning *`,
        [sessions[1]],
      )
    ).rows[0];
    try {
      await expectFound('lost', 'webhook delivered');
    } finally {
      await server.db.query(
        `insert into webhook_deliveries (delivery_id, webhook, tenant, session_id, sequence,
                                         event_type, payload, state, attempts)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          removed.delivery_id,
          removed.webhook,
          removed.tenant,
          removed.session_id,
          removed.sequence,
          removed.event_type,
          JSON.stringify(removed.payload),
          removed.state,
          removed.attempts,
        ],
      );
    }
  });

  it('a redelivery with another body, or a POST of no delivery, is a mismatch', async () => {
    const [first] = acceptedOf(sessions[0] as string);
    await expectFound(
      'mismatch',
      'webhook duplicates carry the same id',
      evidence((list) => [...list, { ...(first as Receipt), body: '{"changed":true}' }]),
    );
    await expectFound(
      'mismatch',
      'webhook duplicates carry the same id',
      evidence((list) => [...list, { ...(first as Receipt), id: 'msg_unknown' }]),
    );
  });

  it("a session's events first accepted out of journal order", async () => {
    const [first, second] = acceptedOf(sessions[0] as string);
    await expectFound(
      'order',
      'webhook order per session',
      evidence((list) => [
        second as Receipt,
        ...list.filter((receipt) => receipt !== first && receipt !== second),
        first as Receipt,
      ]),
    );
  });

  it('a POST that did not verify is a mismatch', async () => {
    await expectFound('mismatch', 'webhook signature', { ...evidence(), invalid: ['{}'] });
  });

  it('a late redelivery with the same id is counted, not a violation', async () => {
    const [first] = acceptedOf(sessions[0] as string);
    const result = await check(evidence((list) => [...list, first as Receipt]));
    expect(result.findings.violations).toEqual([]);
    expect(result.webhooks?.lateDuplicates).toBe(1);
  });
});
