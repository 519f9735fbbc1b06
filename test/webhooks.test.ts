import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookStatus } from '../src/store/webhookStatus.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/** A receiver that checks every request with the `standardwebhooks` package. */
class Receiver {
  readonly accepted: { id: string; payload: any }[] = [];
  readonly attempts: { id: string; status: number }[] = [];
  readonly invalid: string[] = [];
  /** Each delivery id is answered 503 this many times before it is accepted. */
  failuresPerDelivery = 0;
  /** Every delivery fails (a dead receiver). */
  alwaysFail = false;
  private readonly failed = new Map<string, number>();
  private server: Server | null = null;
  url = '';

  constructor(private readonly secret: string) {}

  async start(): Promise<this> {
    const verifier = new Webhook(this.secret);
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let payload: any;
        try {
          payload = verifier.verify(body, req.headers as Record<string, string>);
        } catch {
          this.invalid.push(body);
          res.writeHead(400).end();
          return;
        }
        const id = String(req.headers['webhook-id']);
        const failedSoFar = this.failed.get(id) ?? 0;
        if (this.alwaysFail || failedSoFar < this.failuresPerDelivery) {
          this.failed.set(id, failedSoFar + 1);
          this.attempts.push({ id, status: 503 });
          res.writeHead(503).end();
          return;
        }
        this.attempts.push({ id, status: 204 });
        this.accepted.push({ id, payload });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks?token=abc`;
    return this;
  }

  close(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => this.server?.close(() => resolve()));
  }
}

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const deadSecret = `whsec_${randomBytes(32).toString('base64')}`;
let receiver: Receiver;
let deadReceiver: Receiver;
let server: TestServer;

beforeAll(async () => {
  receiver = await new Receiver(secret).start();
  deadReceiver = await new Receiver(deadSecret).start();
  deadReceiver.alwaysFail = true;
  server = await startTestServer(
    {
      webhooks: {
        crm: {
          url: receiver.url,
          events: ['done', 'error'],
          secret_env: 'CRM_SECRET',
          tenants: ['default'],
          retry_base_ms: 50,
        },
        audit: {
          url: deadReceiver.url,
          events: ['message'],
          secret_env: 'AUDIT_SECRET',
          tenants: ['default'],
          retry_base_ms: 20,
          max_attempts: 2,
        },
      },
    },
    { CRM_SECRET: secret, AUDIT_SECRET: deadSecret },
  );
});

afterAll(async () => {
  await server?.close();
  await receiver?.close();
  await deadReceiver?.close();
});

function admit(turnId: string, message: string, sessionId?: string) {
  return request(server.url, 'POST', '/api/v1/chat/turns', {
    turn_id: turnId,
    message,
    ...(sessionId ? { session_id: sessionId } : {}),
  });
}

describe('outbound webhooks (Standard Webhooks)', () => {
  it('POSTs the selected events, signed so that the standardwebhooks package verifies them', async () => {
    const admitted = await admit('wh_1', 'hello webhooks');
    const sessionId = admitted.body.session_id as string;
    const [done] = await until(
      () => receiver.accepted.filter((delivery) => delivery.payload.data.session_id === sessionId),
      (found) => found.length === 1,
      'the done event',
    );
    expect(done!.id).toMatch(/^msg_[0-9A-Z]{26}$/);
    expect(done!.payload).toMatchObject({
      type: 'done',
      data: {
        tenant: 'default',
        session_id: sessionId,
        agent: 'default',
        event: {
          type: 'done',
          turn_ids: ['wh_1'],
          final_message: { content: 'You said: hello webhooks' },
        },
      },
    });
    expect(receiver.invalid).toEqual([]);
    // Not selected: the message, turn_started and text_delta events.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(
      receiver.accepted.filter((delivery) => delivery.payload.data.session_id === sessionId),
    ).toHaveLength(1);
  });

  it("delivers a session's events in journal order, each only after the one before it", async () => {
    // Every delivery fails once: a later event must still wait for the earlier one.
    receiver.failuresPerDelivery = 1;
    try {
      const first = await admit('wh_order_1', 'one');
      const sessionId = first.body.session_id as string;
      for (const [index, word] of ['two', 'three', 'four'].entries()) {
        await admit(`wh_order_${index + 2}`, word, sessionId);
      }
      const delivered = await until(
        () =>
          receiver.accepted.filter((delivery) => delivery.payload.data.session_id === sessionId),
        (found) => found.flatMap((delivery) => delivery.payload.data.event.turn_ids).length === 4,
        'every turn answered',
      );
      const sequences = delivered.map((delivery) => delivery.payload.data.event.sequence as number);
      expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
      const ids = delivered.map((delivery) => delivery.id);
      const log = receiver.attempts.filter((attempt) => ids.includes(attempt.id));
      for (let index = 1; index < ids.length; index++) {
        const firstTry = log.findIndex((attempt) => attempt.id === ids[index]);
        const previousAccepted = log.findIndex(
          (attempt) => attempt.id === ids[index - 1] && attempt.status === 204,
        );
        expect(firstTry).toBeGreaterThan(previousAccepted);
      }
    } finally {
      receiver.failuresPerDelivery = 0;
    }
  });

  it('retries a failing endpoint with the same webhook-id until it accepts, once', async () => {
    const before = receiver.attempts.length;
    receiver.failuresPerDelivery = 2;
    try {
      const admitted = await admit('wh_retry', 'try again');
      const sessionId = admitted.body.session_id as string;
      const [accepted] = await until(
        () =>
          receiver.accepted.filter((delivery) => delivery.payload.data.session_id === sessionId),
        (found) => found.length === 1,
        'the delivery after two failures',
      );
      const tries = receiver.attempts
        .slice(before)
        .filter((attempt) => attempt.id === accepted!.id);
      expect(tries.map((attempt) => attempt.status)).toEqual([503, 503, 204]);
    } finally {
      receiver.failuresPerDelivery = 0;
    }
  });

  it('dead-letters a delivery after its last attempt and shows it in the status', async () => {
    const admitted = await admit('wh_dead', 'nobody listens');
    const sessionId = admitted.body.session_id as string;
    const status = await until(
      () => request(server.url, 'GET', '/api/v1/admin/webhooks'),
      (answer) =>
        answer.body.dead_letters?.some(
          (dead: any) => dead.session_id === sessionId && dead.webhook === 'audit',
        ),
      'the dead letter',
    );
    const audit = status.body.items.find((item: any) => item.name === 'audit');
    expect(audit).toMatchObject({ url: deadReceiver.url.split('?')[0], events: ['message'] });
    expect(audit.dead).toBeGreaterThan(0);
    const dead = status.body.dead_letters.find((item: any) => item.session_id === sessionId);
    expect(dead).toMatchObject({ event_type: 'message', attempts: 2, last_error: 'HTTP 503' });
    expect(JSON.stringify(status.body)).not.toContain('token=abc');
    expect(status.body.items.find((item: any) => item.name === 'crm').delivered).toBeGreaterThan(0);
    // The status is the principal's tenant's: another tenant's admin sees none of it.
    const foreign = await webhookStatus(server.db, 'acme', ['audit', 'crm'], 20);
    expect(foreign.dead).toEqual([]);
    for (const row of foreign.counts) {
      expect(row).toMatchObject({ pending: 0, delivered: 0, dead: 0 });
    }

    const cli = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        ['dist/cli/main.js', 'webhooks', 'status', '--url', server.url],
        {
          env: { ...process.env, PARLEY_CONFIG: '', DATABASE_URL: '' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.on('exit', (code) => resolve({ code, stdout }));
    });
    expect(cli.code).toBe(0);
    const openapi = await request(server.url, 'GET', '/api/v1/openapi.json');
    expect(openapi.body.paths['/api/v1/admin/webhooks']).toBeDefined();
    expect(openapi.body.paths['/adapters/slack/events']).toBeDefined();
    expect(cli.stdout).toMatch(/audit\s+\d+\s+\d+\s+[1-9]/);
    expect(cli.stdout).toContain('Dead letters');
    expect(cli.stdout).toContain(sessionId);
  });
});
