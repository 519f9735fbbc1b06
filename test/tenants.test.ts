import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { request } from './support/server.js';
import { SseClient } from './support/sse.js';

const aliceKey = 'alice-key-7f3a9c2e1b';
const bobKey = 'bob-key-0d4e8b6a55';
const carolKey = 'carol-key-acme-22c1';
let running: Running;
let url: string;
let drop: () => Promise<void>;
let logged = '';

beforeAll(async () => {
  const fresh = await freshStorage();
  drop = fresh.drop;
  const config = testConfig(
    fresh.storage,
    {
      auth: {
        keys: [
          { key_env: 'KEY_ALICE', tenant: 'acme', user: 'alice', roles: ['reviewer', 'admin'] },
          { key_env: 'KEY_BOB', tenant: 'globex', user: 'bob', roles: ['admin'] },
          { key_env: 'KEY_CAROL', tenant: 'acme', user: 'carol', roles: [] },
        ],
      },
    },
    { KEY_ALICE: aliceKey, KEY_BOB: bobKey, KEY_CAROL: carolKey },
  );
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged += chunk.toString();
      done();
    },
  });
  running = await startProcess(
    config,
    { api: true, worker: true },
    createLogger({ level: 'debug', destination: sink }),
  );
  url = running.url as string;
});
afterAll(async () => {
  await running.stop();
  await drop();
  // No key ever reaches a log line.
  for (const key of [aliceKey, bobKey, carolKey]) expect(logged).not.toContain(key);
});

const as = (key: string) => ({ authorization: `Bearer ${key}` });

describe('principals and tenants', () => {
  it('requires a valid key on every API endpoint, with a coded 401', async () => {
    for (const headers of [{}, as('wrong-key'), { authorization: 'Basic abc' }]) {
      const response = await request(url, 'GET', '/api/v1/chat/sessions', undefined, headers);
      expect(response.status).toBe(401);
      expect(response.body.error).toBe('unauthorized');
      expect(JSON.stringify(response.body)).not.toContain('wrong-key');
    }
    // probes and the contract need no key
    expect((await request(url, 'GET', '/healthz')).status).toBe(200);
    expect((await request(url, 'GET', '/api/v1/openapi.json')).status).toBe(200);
  });

  it("hides another tenant's session on every endpoint, indistinguishable from a missing one", async () => {
    const admitted = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'tenant_1', message: 'secret plan' },
      as(aliceKey),
    );
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id;
    const own = await SseClient.open(url, sessionId, {});
    // (no key on that stream) → 401, not a leak
    expect(own.status).toBe(401);

    const probes: [string, string, unknown][] = [
      ['GET', `/api/v1/chat/sessions/${sessionId}`, undefined],
      ['GET', `/api/v1/chat/sessions/${sessionId}/messages`, undefined],
      ['GET', `/api/v1/chat/sessions/${sessionId}/events`, undefined],
      [
        'POST',
        '/api/v1/chat/turns',
        { session_id: sessionId, turn_id: 'bob_1', message: 'let me in' },
      ],
      ['POST', `/api/v1/admin/sessions/${sessionId}/unpark`, undefined],
      [
        'POST',
        `/api/v1/chat/sessions/${sessionId}/turns/tenant_1/cancel`,
        { command_id: 'bob_cancel' },
      ],
      [
        'POST',
        `/api/v1/chat/sessions/${sessionId}/inputs/req_any`,
        { expected_sequence: 1, approved: true },
      ],
    ];
    for (const [method, path, body] of probes) {
      const foreign = await request(url, method, path, body, as(bobKey));
      const missing = await request(
        url,
        method,
        path.replace(sessionId, '01MISSINGSESSION0000000000'),
        body,
        as(bobKey),
      );
      expect(foreign.status, `${method} ${path}`).toBe(404);
      expect(foreign.body, `${method} ${path}`).toEqual(missing.body);
    }
    const list = await request(url, 'GET', '/api/v1/chat/sessions', undefined, as(bobKey));
    expect(list.body.items.map((item: any) => item.session_id)).not.toContain(sessionId);
    expect(JSON.stringify(list.body)).not.toContain('secret plan');
    // nothing was written by the foreign attempts
    const transcript = await request(
      url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages`,
      undefined,
      as(aliceKey),
    );
    expect(transcript.body.items.map((item: any) => item.content)).not.toContain('let me in');
  });

  it('scopes turn_id uniqueness to the tenant', async () => {
    const alice = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'shared_id', message: 'a' },
      as(aliceKey),
    );
    const bob = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'shared_id', message: 'b' },
      as(bobKey),
    );
    expect(alice.status).toBe(202);
    expect(bob.status).toBe(202);
    expect(bob.body.session_id).not.toBe(alice.body.session_id);
  });

  it('records the authenticated principal as the author, and lets the tenant share a session', async () => {
    const alice = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'room_1', message: 'from alice' },
      as(aliceKey),
    );
    const sessionId = alice.body.session_id;
    const carol = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'room_2', message: 'from carol', author: 'mallory' },
      as(carolKey),
    );
    // a body cannot claim an author
    expect(carol.status).toBe(400);
    const carolOk = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'room_2', message: 'from carol' },
      as(carolKey),
    );
    expect(carolOk.status).toBe(202);
    const stream = await fetch(`${url}/api/v1/chat/sessions/${sessionId}/events`, {
      headers: as(carolKey),
    });
    expect(stream.status).toBe(200);
    await stream.body?.cancel();
    const transcript = await request(
      url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages`,
      undefined,
      as(aliceKey),
    );
    const authors = transcript.body.items
      .filter((item: any) => item.role === 'user')
      .map((item: any) => [item.author, item.content]);
    expect(authors).toEqual(
      expect.arrayContaining([
        ['alice', 'from alice'],
        ['carol', 'from carol'],
      ]),
    );
  });

  it('limits operator endpoints to the admin role', async () => {
    const response = await request(
      url,
      'POST',
      '/api/v1/admin/prune',
      { older_than_days: 30 },
      as(carolKey),
    );
    expect(response.status).toBe(403);
    expect(response.body.error).toBe('forbidden');
  });
});
