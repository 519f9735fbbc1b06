import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerWebhooks } from '../src/store/registerWebhooks.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/** A receiver that accepts every delivery and keeps the payloads. */
class Receiver {
  readonly payloads: any[] = [];
  url = '';
  private server: Server | null = null;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.payloads.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks?token=secret`;
    return this;
  }

  sessions(): string[] {
    return this.payloads.map((payload) => payload.data.session_id as string);
  }

  close(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => this.server?.close(() => resolve()));
  }
}

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const acme = { authorization: 'Bearer acme-admin-key' };
const globex = { authorization: 'Bearer globex-admin-key' };
let acmeHook: Receiver;
let everyHook: Receiver;
let server: TestServer;

beforeAll(async () => {
  acmeHook = await new Receiver().start();
  everyHook = await new Receiver().start();
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ACME', tenant: 'acme', user: 'ann', roles: ['admin'] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gil', roles: ['admin'] },
          { key_env: 'K_OPS', tenant: 'ops', user: 'olga', roles: ['admin'], operator: true },
        ],
      },
      webhooks: {
        acme_crm: {
          url: acmeHook.url,
          events: ['done'],
          secret_env: 'HOOK_SECRET',
          tenants: ['acme'],
        },
        operator_audit: {
          url: everyHook.url,
          events: ['done'],
          secret_env: 'HOOK_SECRET',
          tenants: '*',
        },
      },
    },
    {
      HOOK_SECRET: secret,
      K_ACME: 'acme-admin-key',
      K_GLOBEX: 'globex-admin-key',
      K_OPS: 'ops-operator-key',
    },
  );
});

afterAll(async () => {
  await server?.close();
  await acmeHook?.close();
  await everyHook?.close();
});

function admit(headers: Record<string, string>, turnId: string, message: string) {
  return request(server.url, 'POST', '/api/v1/chat/turns', { turn_id: turnId, message }, headers);
}

describe('outbound webhooks belong to tenants', () => {
  it("sends an endpoint only its tenants' events; a '*' endpoint every tenant's", async () => {
    const acmeSession = (await admit(acme, 'tenants_acme', 'for acme')).body.session_id as string;
    const globexSession = (await admit(globex, 'tenants_globex', 'for globex')).body
      .session_id as string;
    await until(
      () => everyHook.sessions(),
      (sessions) => sessions.includes(acmeSession) && sessions.includes(globexSession),
      "both tenants' done events at the operator's endpoint",
    );
    await until(
      () => acmeHook.sessions(),
      (sessions) => sessions.includes(acmeSession),
      "acme's done event at acme's endpoint",
    );
    // Given every chance to send globex's reply to acme's endpoint, it did not.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(acmeHook.sessions()).not.toContain(globexSession);
    expect(acmeHook.payloads.every((payload) => payload.data.tenant === 'acme')).toBe(true);
    const streams = await server.db.query(
      `select 1 from webhook_streams where webhook = 'acme_crm' and session_id = $1`,
      [globexSession],
    );
    expect(streams.rowCount).toBe(0);
  });

  it("shows a tenant's admin its own endpoints, and every tenant's without their address", async () => {
    const forAcme = await request(server.url, 'GET', '/api/v1/admin/webhooks', undefined, acme);
    expect(forAcme.status).toBe(200);
    const byName = new Map(forAcme.body.items.map((item: any) => [item.name, item]));
    expect(byName.get('acme_crm')).toMatchObject({
      scope: 'tenant',
      url: acmeHook.url.split('?')[0],
    });
    expect(byName.get('operator_audit')).toMatchObject({ scope: 'all', url: null });
    expect(byName.get('operator_audit')).toMatchObject({ delivered: expect.any(Number) });

    const forGlobex = await request(server.url, 'GET', '/api/v1/admin/webhooks', undefined, globex);
    expect(forGlobex.body.items.map((item: any) => item.name)).toEqual(['operator_audit']);
    const text = JSON.stringify(forGlobex.body);
    expect(text).not.toContain(String(new URL(acmeHook.url).port));
    expect(text).not.toContain(String(new URL(everyHook.url).port));
  });

  it('shows the operator every endpoint with its address', async () => {
    const forOperator = await request(server.url, 'GET', '/api/v1/admin/webhooks', undefined, {
      authorization: 'Bearer ops-operator-key',
    });
    expect(forOperator.status).toBe(200);
    const byName = new Map(forOperator.body.items.map((item: any) => [item.name, item]));
    expect(byName.get('acme_crm')).toMatchObject({ url: acmeHook.url.split('?')[0] });
    expect(byName.get('operator_audit')).toMatchObject({
      scope: 'all',
      url: everyHook.url.split('?')[0],
    });
  });

  it('dead-letters the pending deliveries of a tenant the endpoint no longer belongs to', async () => {
    const sessionId = (await admit(globex, 'tenants_moved', 'still pending')).body
      .session_id as string;
    await until(
      () =>
        server.db.query(
          `select 1 from webhook_deliveries
            where webhook = 'operator_audit' and session_id = $1 and state = 'delivered'`,
          [sessionId],
        ),
      (delivered) => delivered.rowCount === 1,
      "globex's reply delivered to the operator's endpoint",
    );
    // A delivery of globex's still waiting for the operator's endpoint, as if just enqueued.
    await server.db.query(
      `update webhook_deliveries set state = 'pending', attempts = 0, next_attempt_at = now() + interval '1 hour'
        where webhook = 'operator_audit' and session_id = $1`,
      [sessionId],
    );
    const everyTenant = await server.db.query<{ registered_at: Date }>(
      `select registered_at from webhook_endpoints where webhook = 'operator_audit' and tenant = '*'`,
    );
    // The endpoint is now configured for acme alone.
    await registerWebhooks(server.db, [{ webhook: 'operator_audit', tenants: ['acme'] }]);
    const rows = await server.db.query<{ state: string; last_error: string }>(
      `select state, last_error from webhook_deliveries where webhook = 'operator_audit' and session_id = $1`,
      [sessionId],
    );
    expect(rows.rows).toEqual([
      { state: 'dead', last_error: 'the endpoint no longer belongs to this tenant' },
    ]);
    // acme keeps the time the endpoint became every tenant's: it has had acme's events since.
    const owners = await server.db.query<{ tenant: string; registered_at: Date }>(
      `select tenant, registered_at from webhook_endpoints where webhook = 'operator_audit'`,
    );
    expect(owners.rows).toEqual([
      { tenant: 'acme', registered_at: everyTenant.rows[0]?.registered_at },
    ]);
    const streams = await server.db.query(
      `select 1 from webhook_streams where webhook = 'operator_audit' and tenant = 'globex'`,
    );
    expect(streams.rowCount).toBe(0);
    await registerWebhooks(server.db, [{ webhook: 'operator_audit', tenants: '*' }]);
  });
});
