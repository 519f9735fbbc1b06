import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { FakeTeams, teamsMessageActivity } from './support/platforms/teams.js';
import { startTestServer, type TestServer } from './support/server.js';

const appId = 'app-0001';
let teams: FakeTeams;
let server: TestServer;
let next = 1;

async function send(body: string, token: string | null) {
  const response = await fetch(`${server.url}/adapters/teams/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body,
  });
  return { status: response.status, body: await response.text() };
}

function message(text: string) {
  const n = next++;
  const conversation = `a:conversation-${n}`;
  return {
    conversation,
    body: teamsMessageActivity({
      id: `17000000000${n}`,
      conversation,
      user: '29:tom',
      text,
      serviceUrl: teams.server.url,
      appId,
    }),
  };
}

beforeAll(async () => {
  teams = await FakeTeams.start();
  server = await startTestServer(
    {
      adapters: {
        teams: {
          tenant: 'contoso',
          app_id: appId,
          app_password_env: 'TEAMS_APP_PASSWORD',
          app_tenant_id: 'tenant-1',
          openid_url: `${teams.server.url}/openid`,
          token_url: `${teams.server.url}/token`,
          api_url: teams.server.url,
          users: { '29:tom': { user: 'tom', roles: [] } },
          edit_interval_ms: 20,
          retry_base_ms: 50,
        },
      },
    },
    { TEAMS_APP_PASSWORD: 'teams-secret-made-by-the-test', PARLEY_DEMO_DELAY_MS: '60' },
  );
});

afterAll(async () => {
  await server?.close();
  await teams?.close();
});

describe('Teams through the Chat SDK', () => {
  it('turns a message into one turn, answered by an activity and its updates', async () => {
    const input = message('hello teams');
    const token = await teams.token({ appId, serviceUrl: teams.server.url });
    const answer = await send(input.body, token);
    expect(answer.status).toBeLessThan(300);
    const replies = await until(
      () => teams.messagesIn(input.conversation),
      (found) => found.some((reply) => /You said: hello teams/.test(reply.text)),
      'the reply',
    );
    expect(replies).toHaveLength(1);
    expect(replies[0]!.history.length).toBeGreaterThan(1);
    // The bot's own token came from the configured endpoint, with the app's credentials.
    expect(teams.tokenRequests[0]).toMatchObject({
      grant_type: 'client_credentials',
      client_id: appId,
    });
    expect((await send(input.body, token)).status).toBeLessThan(300);
    const turns = await server.db.query(`select 1 from messages where content = 'hello teams'`);
    expect(turns.rowCount).toBe(1);
  });

  it('refuses a token of another key, app or service URL with 401, writing nothing', async () => {
    const before = (await server.db.query('select 1 from sessions')).rowCount;
    const input = message('forged');
    const other = await FakeTeams.start();
    try {
      for (const token of [
        await other.token({ appId, serviceUrl: teams.server.url }),
        await teams.token({ appId: 'another-app', serviceUrl: teams.server.url }),
        await teams.token({ appId, serviceUrl: 'https://elsewhere.example.com' }),
        null,
      ]) {
        const answer = await send(input.body, token);
        expect(answer.status).toBe(401);
        expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_signature' });
      }
    } finally {
      await other.close();
    }
    expect((await server.db.query('select 1 from sessions')).rowCount).toBe(before);
  });
});
