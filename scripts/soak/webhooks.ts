import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { DrainAccess } from './drain.js';
import type { Random } from './random.js';

/** The journal events the soak's endpoint subscribes to: every message and every turn's end. */
export const webhookEvents = ['message', 'done', 'cancelled', 'error'];

/** One POST a receiver answered, in arrival order. */
export interface Answered {
  /** The `webhook-id` header: one delivery, the same on every retry. */
  id: string;
  /** The body as sent: a duplicate must carry the same one. */
  body: string;
  /** What the receiver answered: 2xx means stored, anything else asks for a retry. */
  status: number;
}

/** A POST of the soak's webhook endpoint, its event named by its body. */
export interface Receipt extends Answered {
  sessionId: string;
  sequence: number;
  type: string;
}

/**
 * A local HTTP server the soak's Parley POSTs to, which outlives every kill: `read` takes a
 * POST (what to record of it, or null to refuse it with 400 as not verified); the rest is
 * recorded and answered 204 — or, for a seeded share, 503, or 204 only after a pause, so
 * that retries and redeliveries happen besides those the chaos causes. What it recorded is
 * the checker's evidence of what the endpoint was told.
 */
export class HookReceiver<T> {
  readonly receipts: (T & Answered)[] = [];
  /** POSTs `read` refused (answered 400). */
  readonly invalid: string[] = [];
  private server: Server | null = null;
  url = '';

  constructor(
    private readonly random: Random,
    private readonly path: string,
    private readonly read: (body: string, headers: Record<string, string>) => T | null,
  ) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = req.headers as Record<string, string>;
        const read = this.read(body, headers);
        if (read === null) {
          this.invalid.push(body.slice(0, 200));
          res.writeHead(400).end();
          return;
        }
        const status = this.random.chance(0.1) ? 503 : 204;
        this.receipts.push({ ...read, id: String(headers['webhook-id']), body, status });
        const answer = () => res.writeHead(status).end();
        if (this.random.chance(0.05)) setTimeout(answer, this.random.int(100, 1_500));
        else answer();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${this.path}`;
    return this;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      if (!this.server) return resolve();
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}

/**
 * The soak's webhook receiver (docs/adapters.md, "Outbound webhooks"): each POST's
 * Standard Webhooks signature verified, its event recorded.
 */
export class WebhookReceiver extends HookReceiver<Omit<Receipt, keyof Answered>> {
  readonly secret: string;

  constructor(random: Random) {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const verifier = new Webhook(secret);
    super(random, '/hook', (body, headers) => {
      let payload: any;
      try {
        payload = verifier.verify(body, headers);
      } catch {
        return null;
      }
      return {
        sessionId: String(payload?.data?.session_id),
        sequence: Number(payload?.data?.event?.sequence),
        type: String(payload?.type),
      };
    });
    this.secret = secret;
  }
}

/**
 * The soak's endpoint in the configuration: every tenant's sessions, quick retries, and
 * attempts enough that only a receiver that stays down could dead-letter a delivery.
 */
export function webhookConfig(url: string, secretEnv: string): Record<string, unknown> {
  return {
    soak: {
      url,
      events: webhookEvents,
      tenants: '*',
      secret_env: secretEnv,
      max_attempts: 50,
      retry_base_ms: 100,
      timeout_ms: 5_000,
    },
  };
}

/**
 * After the chaos: waits until the endpoint has followed every session to its last event
 * (each event it selects is then a delivery), every A2A push config has followed its
 * task's session as far, and no delivery is pending (delivered or dead-lettered).
 * Counting deliveries alone would stop before the followers enqueued the last events: the
 * checker would then find them missing.
 */
export function drainWebhooks(access: DrainAccess, timeoutMs: number) {
  return drainPending(
    access,
    `select ((select count(*) from webhook_deliveries where state = 'pending')
           + (select count(*) from sessions s
                left join webhook_streams w on w.webhook = 'soak' and w.session_id = s.session_id
               where s.last_sequence > coalesce(w.followed_sequence, 0))
           + (select count(*) from a2a_push_configs c
                join sessions s on s.session_id = c.session_id
               where not c.finished
                 and s.last_sequence > coalesce(c.followed_sequence, -1)))::int as pending`,
    timeoutMs,
  );
}

/**
 * Waits until every platform thread is folded to its session's last event (each reply
 * the journal holds is then an outbox row) and every reply is posted (or dead-lettered).
 * Counting the outbox alone would stop before a lagging fold wrote the last replies: the
 * checker would then find them never posted.
 */
export function drainReplies(access: DrainAccess, timeoutMs: number) {
  return drainPending(
    access,
    `select ((select count(*) from adapter_replies
               where state = 'pending' and version > delivered_version)
           + (select count(*) from adapter_threads t
                join sessions s on s.session_id = t.session_id
               where s.last_sequence > t.followed_sequence))::int as pending`,
    timeoutMs,
  );
}

async function drainPending(
  access: DrainAccess,
  countSql: string,
  timeoutMs: number,
): Promise<{ pending: number; durationMs: number }> {
  const began = Date.now();
  let pending = -1;
  while (Date.now() - began < timeoutMs) {
    const found = await access.read((db) =>
      db.query<{ pending: number }>(countSql).catch(() => ({ rows: [{ pending: -1 }] })),
    );
    pending = found.rows[0]?.pending ?? -1;
    if (pending === 0) break;
    await access.serve();
    await access.pause();
  }
  return { pending, durationMs: Date.now() - began };
}
