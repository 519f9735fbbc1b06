import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { rawGet, rawPost, rawRequest } from './support/raw.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * Issue 6, "Security and bad input": role checks that no URL spelling gets around, one
 * error envelope for every error (the framework's and Node's included, nothing echoed),
 * slow clients cut off, security headers, the metrics key.
 */

let server: TestServer;
const admin = { authorization: 'Bearer admin-key' };
const member = { authorization: 'Bearer member-key' };
const operator = { authorization: 'Bearer operator-key' };

beforeAll(async () => {
  server = await startTestServer(
    {
      server: { request_timeout_ms: 1000, metrics_key_env: 'METRICS_KEY' },
      auth: {
        keys: [
          { key_env: 'ADMIN_KEY', tenant: 'acme', user: 'ada', roles: ['admin'] },
          { key_env: 'MEMBER_KEY', tenant: 'acme', user: 'max', roles: ['member'] },
          { key_env: 'OPERATOR_KEY', tenant: 'acme', user: 'root', operator: true },
        ],
      },
    },
    {
      ADMIN_KEY: 'admin-key',
      MEMBER_KEY: 'member-key',
      OPERATOR_KEY: 'operator-key',
      METRICS_KEY: 'metrics-key',
    },
  );
});
afterAll(async () => {
  await server.close();
});

/** Every error body is exactly {error, message} plus documented details; never an echo. */
function expectEnvelope(body: string, code: string, notEchoed: string[] = []): void {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  expect(parsed.error).toBe(code);
  expect(typeof parsed.message).toBe('string');
  expect(parsed).not.toHaveProperty('statusCode');
  expect(parsed).not.toHaveProperty('code');
  for (const text of notEchoed) expect(body).not.toContain(text);
}

describe('role checks live on routes, not on URL text', () => {
  const spellings = (path: string) => [
    path,
    path.replace('admin', '%61dmin'),
    path.replace('admin', 'adm%69n'),
    path.replace('admin', '%61%64%6d%69%6e'),
    path.replace('/api/', '/%61pi/'),
    path.replace('/api/v1/', '/%61%70%69/%76%31/'),
  ];

  it('refuses every admin route, however it is spelled, to a key without the admin role', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, member);
    const sessionId = created.body.session_id as string;
    const routes = [
      {
        path: `/api/v1/admin/sessions/${sessionId}/unpark`,
        body: '{}',
        denied: [member],
        key: admin,
      },
      {
        path: '/api/v1/admin/prune',
        body: '{"older_than_seconds": 0}',
        denied: [member],
        key: admin,
      },
    ];
    for (const route of routes) {
      for (const path of spellings(route.path)) {
        for (const who of route.denied) {
          const denied = await rawPost(server.url, path, route.body, {
            'content-type': 'application/json',
            ...who,
          });
          expect(denied.status, path).toBe(403);
          expectEnvelope(denied.body, 'forbidden');
        }
        // The same spelling with the right key reaches the route itself.
        const allowed = await rawPost(server.url, path, route.body, {
          'content-type': 'application/json',
          ...route.key,
        });
        expect([200, 409], path).toContain(allowed.status);
      }
    }
  });
});

describe('one error envelope', () => {
  it('answers an over-long path segment with 414 uri_too_long, without echoing the URL', async () => {
    const long = 'x'.repeat(300);
    const response = await rawPost(
      server.url,
      `/api/v1/chat/sessions/${long}/turns/t/cancel`,
      '{"command_id":"c"}',
      { 'content-type': 'application/json', ...member },
    );
    expect(response.status).toBe(414);
    expectEnvelope(response.body, 'uri_too_long', [long.slice(0, 50)]);
    // A GET may fall through to the web app's catch-all route: still the envelope, no echo.
    const get = await rawGet(server.url, `/api/v1/chat/sessions/${long}`);
    expect(get.status).toBeGreaterThanOrEqual(400);
    expect(get.status).toBeLessThan(500);
    expect(get.body).not.toContain(long.slice(0, 50));
    expect(typeof JSON.parse(get.body).error).toBe('string');
  });

  it('answers a badly encoded URL with 400 invalid_url, without echoing it', async () => {
    const response = await rawGet(server.url, '/api/v1/chat/sessions/%zzsecret');
    expect(response.status).toBe(400);
    expectEnvelope(response.body, 'invalid_url', ['%zz', 'secret']);
  });

  it('answers a wrong or missing content type with 415', async () => {
    const body = JSON.stringify({ turn_id: 'ct_1', message: 'hello' });
    const plain = await rawPost(server.url, '/api/v1/chat/turns', body, {
      'content-type': 'text/plain',
      ...member,
    });
    expect(plain.status).toBe(415);
    expectEnvelope(plain.body, 'unsupported_media_type');
    const none = await rawPost(server.url, '/api/v1/chat/turns', body, member);
    expect(none.status).toBe(415);
    expectEnvelope(none.body, 'unsupported_media_type');
    const form = await rawPost(server.url, '/api/v1/chat/turns', 'turn_id=x', {
      'content-type': 'application/x-www-form-urlencoded',
      ...member,
    });
    expect(form.status).toBe(415);
    // Nothing was admitted.
    const turns = await server.db.query('select 1 from turns where turn_id = $1', ['ct_1']);
    expect(turns.rowCount).toBe(0);
  });

  it('answers oversized headers with 431 headers_too_large in the envelope', async () => {
    const response = await rawRequest(
      server.url,
      `GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-filler: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(response.status).toBe(431);
    expectEnvelope(response.body, 'headers_too_large', ['aaaa']);
  });

  it('answers unparsable HTTP with 400 in the envelope', async () => {
    const response = await rawRequest(server.url, 'NOT HTTP AT ALL\r\n\r\n');
    expect(response.status).toBe(400);
    expectEnvelope(response.body, 'invalid_request');
  });

  it('answers a NUL in a path segment with a coded 400', async () => {
    const response = await request(
      server.url,
      'GET',
      '/api/v1/chat/sessions/ab%00cd',
      undefined,
      member,
    );
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_request');
  });
});

describe('slow clients', () => {
  it('cuts off a half-sent body with 408 request_timeout', async () => {
    const response = await rawRequest(
      server.url,
      'POST /api/v1/chat/turns HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n' +
        `authorization: ${member.authorization}\r\ncontent-length: 100\r\n\r\n{"turn_id":`,
    );
    expect(response.status).toBe(408);
    expectEnvelope(response.body, 'request_timeout');
  });

  it('cuts off a slow drip of headers', async () => {
    const { port } = new URL(server.url);
    const closed = await new Promise<{ answer: string }>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1');
      let answer = '';
      const drip = setInterval(() => socket.write('x-drip: 1\r\n'), 200);
      socket.on('connect', () => socket.write('GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n'));
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('close', () => {
        clearInterval(drip);
        resolve({ answer });
      });
      socket.on('error', () => {});
    });
    expect(closed.answer).toMatch(/^HTTP\/1\.1 408/);
  });
});

describe('headers and metrics', () => {
  it('sends nosniff and no-store on API answers, errors and event streams', async () => {
    const ok = await request(server.url, 'GET', '/api/v1/chat/sessions', undefined, member);
    const missing = await request(server.url, 'GET', '/api/v1/nothing', undefined, member);
    const unauthorized = await request(server.url, 'GET', '/api/v1/chat/sessions');
    for (const response of [ok, missing, unauthorized]) {
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('cache-control')).toBe('no-store');
    }
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, member);
    const controller = new AbortController();
    const stream = await fetch(
      `${server.url}/api/v1/chat/sessions/${created.body.session_id}/events`,
      { headers: member, signal: controller.signal },
    );
    expect(stream.headers.get('x-content-type-options')).toBe('nosniff');
    expect(stream.headers.get('cache-control')).toContain('no-store');
    controller.abort();
  });

  it('keeps /metrics behind its key when metrics_key_env is set', async () => {
    expect((await request(server.url, 'GET', '/metrics')).status).toBe(401);
    // A tenant's API key is not the metrics key, nor an operator's.
    expect((await request(server.url, 'GET', '/metrics', undefined, member)).status).toBe(403);
    expect((await request(server.url, 'GET', '/metrics', undefined, operator)).status).toBe(200);
    const scraped = await request(server.url, 'GET', '/metrics', undefined, {
      authorization: 'Bearer metrics-key',
    });
    expect(scraped.status).toBe(200);
    expect(String(scraped.body)).toContain('parley_http_requests_total');
    // Probes stay open.
    expect((await request(server.url, 'GET', '/healthz')).status).toBe(200);
  });
});

describe('stream limits', () => {
  it('refuses streams past limits.streams_per_principal with 429 too_many_streams', async () => {
    const limited = await startTestServer({ limits: { streams_per_principal: 3 } });
    try {
      const created = await request(limited.url, 'POST', '/api/v1/chat/sessions', {});
      const path = `${limited.url}/api/v1/chat/sessions/${created.body.session_id}/events`;
      const controllers = [0, 1, 2].map(() => new AbortController());
      const open = await Promise.all(
        controllers.map((controller) => fetch(path, { signal: controller.signal })),
      );
      expect(open.map((response) => response.status)).toEqual([200, 200, 200]);
      const refused = await request(limited.url, 'GET', new URL(path).pathname);
      expect(refused.status).toBe(429);
      expect(refused.body.error).toBe('too_many_streams');
      // Closing one frees its slot.
      controllers[0]?.abort();
      await until(
        async () => {
          const again = await fetch(path, { signal: AbortSignal.timeout(5000) }).catch(() => null);
          if (again?.status !== 200) return false;
          await again.body?.cancel();
          return true;
        },
        (freed) => freed,
        'a freed slot',
      );
      for (const controller of controllers) controller.abort();
    } finally {
      await limited.close();
    }
  });
});
