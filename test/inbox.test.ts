import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ParleyClient } from '../src/client/index.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// The approvals inbox (GET /api/v1/inputs), the agents listing and /api/v1/me: the
// extensions the web app needs. Two tenants; in acme, alice is a lead and carol is not.
let server: TestServer;
const keys = { K_ALICE: 'alice-key', K_CAROL: 'carol-key', K_BOB: 'bob-key' };
const alice = { authorization: 'Bearer alice-key' };
const carol = { authorization: 'Bearer carol-key' };
const bob = { authorization: 'Bearer bob-key' };
let counter = 0;

beforeAll(async () => {
  const tools = { calculator: 'approve', ask_user: 'allow' };
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: ['lead'] },
          { key_env: 'K_CAROL', tenant: 'acme', user: 'carol', roles: [] },
          { key_env: 'K_BOB', tenant: 'globex', user: 'bob', roles: ['lead'] },
        ],
      },
      agents: {
        default: { model: 'demo/echo', tools, greeting: 'Hello!' },
        guarded: { model: 'demo/echo', tools, approver_roles: ['lead'] },
      },
    },
    keys,
  );
});
afterAll(async () => {
  await server.close();
});

async function waitingSession(
  who: Record<string, string>,
  agent: string,
  message = '/tool calculator {"expression": "6*7"}',
): Promise<string> {
  const admitted = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    { turn_id: `inbox_${counter++}`, agent, message },
    who,
  );
  expect(admitted.status).toBe(202);
  const sessionId = admitted.body.session_id as string;
  await until(
    () => request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`, undefined, who),
    (response) => response.body.state === 'input_required',
    'the approval request',
  );
  return sessionId;
}

const inbox = (who: Record<string, string>, query = 'state=pending') =>
  request(server.url, 'GET', `/api/v1/inputs?${query}`, undefined, who);

describe('GET /api/v1/inputs (the approvals inbox)', () => {
  it("lists the tenant's pending requests that the caller may answer, and only those", async () => {
    const open = await waitingSession(alice, 'default');
    const guarded = await waitingSession(alice, 'guarded');
    const foreign = await waitingSession(bob, 'guarded');

    const forAlice = await inbox(alice);
    expect(forAlice.status).toBe(200);
    const aliceSessions = forAlice.body.items.map((item: any) => item.session_id);
    expect(aliceSessions).toContain(open);
    expect(aliceSessions).toContain(guarded);
    expect(aliceSessions).not.toContain(foreign);
    const item = forAlice.body.items.find((entry: any) => entry.session_id === guarded);
    expect(item).toMatchObject({
      agent: 'guarded',
      kind: 'approval',
      tool: 'calculator',
      arguments: { expression: '6*7' },
      prompt: null,
    });
    expect(item.request_id).toMatch(/^req_/);
    expect(typeof item.expected_sequence).toBe('number');
    expect(Number.isNaN(Date.parse(item.created_at))).toBe(false);

    // carol has no lead role: the guarded agent's request is not hers to answer.
    const forCarol = await inbox(carol);
    const carolSessions = forCarol.body.items.map((entry: any) => entry.session_id);
    expect(carolSessions).toContain(open);
    expect(carolSessions).not.toContain(guarded);
    expect(carolSessions).not.toContain(foreign);

    // The other tenant sees its own request and nothing of acme's.
    const forBob = (await inbox(bob)).body.items.map((entry: any) => entry.session_id);
    expect(forBob).toEqual([foreign]);

    // Answered (here, through the inbox's own data): gone from the list at once.
    const answered = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${guarded}/inputs/${item.request_id}`,
      { expected_sequence: item.expected_sequence, approved: true },
      alice,
    );
    expect(answered.status).toBe(200);
    const after = (await inbox(alice)).body.items.map((entry: any) => entry.request_id);
    expect(after).not.toContain(item.request_id);
  });

  it('carries the prompt of a question', async () => {
    const sessionId = await waitingSession(
      alice,
      'default',
      '/tool ask_user {"question": "Which colour?"}',
    );
    const items = (await inbox(alice)).body.items.filter(
      (entry: any) => entry.session_id === sessionId,
    );
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ kind: 'question', tool: null, prompt: 'Which colour?' });
  });

  it('pages with a cursor, oldest first, without repeating an item', async () => {
    await waitingSession(alice, 'default');
    await waitingSession(alice, 'default');
    const all = (await inbox(alice, 'state=pending&limit=200')).body.items.map(
      (entry: any) => entry.request_id,
    );
    expect(all.length).toBeGreaterThanOrEqual(3);
    expect([...all].sort()).toEqual(all);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await inbox(
        alice,
        `state=pending&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(1);
      seen.push(...page.body.items.map((entry: any) => entry.request_id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all);
  });

  it('refuses other states, bad cursors and missing keys with coded errors', async () => {
    const wrongState = await inbox(alice, 'state=answered');
    expect(wrongState.status).toBe(400);
    expect(wrongState.body).toMatchObject({ error: 'invalid_request', field: 'state' });
    const noState = await inbox(alice, '');
    expect(noState.status).toBe(400);
    const badCursor = await inbox(alice, 'state=pending&cursor=nonsense');
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.error).toBe('invalid_cursor');
    const anonymous = await request(server.url, 'GET', '/api/v1/inputs?state=pending');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe('unauthorized');
  });

  it('is what parley/client.listInputs reads', async () => {
    const client = new ParleyClient({ baseUrl: server.url, apiKey: 'carol-key' });
    const page = await client.listInputs({ limit: 200 });
    expect(page.items.every((entry) => entry.agent === 'default')).toBe(true);
    expect(page.items.length).toBeGreaterThan(0);
  });
});

describe('GET /api/v1/agents and /api/v1/me', () => {
  it('lists agents with safe fields only, and whether the caller may answer for each', async () => {
    const client = new ParleyClient({ baseUrl: server.url, apiKey: 'carol-key' });
    const { items } = await client.listAgents();
    expect(items.map((agent) => agent.name).sort()).toEqual(['default', 'guarded']);
    const guarded = items.find((agent) => agent.name === 'guarded');
    expect(guarded).toMatchObject({
      default: false,
      approver_roles: ['lead'],
      may_answer: false,
      accepts_images: false,
    });
    expect(guarded?.tools).toContainEqual({ name: 'calculator', policy: 'approve' });
    const fallback = items.find((agent) => agent.name === 'default');
    expect(fallback).toMatchObject({ default: true, greeting: 'Hello!', may_answer: true });
    expect(JSON.stringify(items)).not.toContain('helpful assistant');
  });

  it('says who the caller is, and 401s without a key', async () => {
    const client = new ParleyClient({ baseUrl: server.url, apiKey: 'alice-key' });
    expect(await client.me()).toEqual({
      tenant: 'acme',
      user: 'alice',
      roles: ['lead'],
      operator: false,
      mode: 'keys',
      display_name: null,
      avatar_url: null,
    });
    const wrong = new ParleyClient({ baseUrl: server.url, apiKey: 'not-a-key' });
    await expect(wrong.me()).rejects.toMatchObject({ code: 'unauthorized', status: 401 });
  });
});

describe('the OpenAPI document', () => {
  it('describes the extensions', async () => {
    const document = (await request(server.url, 'GET', '/api/v1/openapi.json')).body;
    for (const path of ['/api/v1/inputs', '/api/v1/agents', '/api/v1/me']) {
      expect(document.paths[path]?.get, path).toBeDefined();
    }
    expect(document.components.schemas.InboxItem.required).toContain('expected_sequence');
    expect(document.components.schemas.Agent.properties).not.toHaveProperty('instructions');
  });
});
