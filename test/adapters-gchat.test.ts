import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { FakeGchat, gchatMessageEvent } from './support/platforms/gchat.js';
import { startTestServer, type TestServer } from './support/server.js';

const projectNumber = '123456789';
let gchat: FakeGchat;
let server: TestServer;
let next = 1;

async function send(body: string, token: string | null) {
  const response = await fetch(`${server.url}/adapters/gchat/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body,
  });
  return { status: response.status, body: await response.text() };
}

function dm(text: string) {
  const n = next++;
  const space = `spaces/DM${n}`;
  return {
    space,
    body: gchatMessageEvent({ space, message: `M${n}`, user: 'users/111', text, dm: true }),
  };
}

beforeAll(async () => {
  gchat = await FakeGchat.start();
  server = await startTestServer(
    {
      adapters: {
        gchat: {
          tenant: 'workspace',
          credentials_env: 'GCHAT_CREDENTIALS',
          project_number: projectNumber,
          jwks_url: `${gchat.server.url}/jwks`,
          api_url: gchat.server.url,
          users: { 'users/111': { user: 'gina', roles: [] } },
          edit_interval_ms: 20,
          retry_base_ms: 50,
        },
      },
    },
    { GCHAT_CREDENTIALS: await gchat.serviceAccount(), PARLEY_DEMO_DELAY_MS: '60' },
  );
});

afterAll(async () => {
  await server?.close();
  await gchat?.close();
});

describe('Google Chat through the Chat SDK', () => {
  it('turns a direct message into one turn, answered by a post and its edits', async () => {
    const message = dm('hello google chat');
    const token = await gchat.token({ audience: projectNumber });
    expect((await send(message.body, token)).status).toBe(200);
    const replies = await until(
      () => gchat.inSpace(message.space),
      (found) => found.some((reply) => /You said: hello google chat/.test(reply.text)),
      'the reply',
    );
    expect(replies).toHaveLength(1);
    expect(replies[0]!.history.length).toBeGreaterThan(1);
    // A client-assigned id (Google refuses a second create with it), and the service
    // account's token from its own token endpoint.
    expect(replies[0]!.name).toMatch(/\/messages\/client-rep-[0-9a-z]+$/);
    const create = gchat.server
      .callsTo('POST /v1/spaces/*')
      .find((call) => call.path.includes(message.space));
    expect(create?.headers.authorization).toBe('Bearer gchat-access-token');
    expect((await send(message.body, token)).status).toBe(200);
    const turns = await server.db.query(
      `select 1 from messages where content = 'hello google chat'`,
    );
    expect(turns.rowCount).toBe(1);
  });

  it('refuses a token of another key, audience or issuer with 401, writing nothing', async () => {
    const before = (await server.db.query('select 1 from sessions')).rowCount;
    const message = dm('forged');
    const other = await FakeGchat.start();
    try {
      for (const token of [
        await other.token({ audience: projectNumber }),
        await gchat.token({ audience: '999' }),
        await gchat.token({ audience: projectNumber, issuer: 'someone@example.com' }),
        null,
      ]) {
        const answer = await send(message.body, token);
        expect(answer.status).toBe(401);
        expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_signature' });
      }
    } finally {
      await other.close();
    }
    expect((await server.db.query('select 1 from sessions')).rowCount).toBe(before);
  });

  it('posts once when the first create reached Google but its answer was lost', async () => {
    const message = dm('lost answer');
    gchat.loseNextCreateResponse = true;
    await send(message.body, await gchat.token({ audience: projectNumber }));
    const replies = await until(
      () => gchat.inSpace(message.space),
      (found) => found.some((reply) => /You said: lost answer/.test(reply.text)),
      'the reply',
    );
    expect(replies).toHaveLength(1);
    const creates = gchat.server
      .callsTo('POST /v1/spaces/*')
      .filter((call) => call.path.includes(message.space));
    expect(creates).toHaveLength(2);
  });
});
