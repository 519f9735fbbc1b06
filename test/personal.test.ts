import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUniqueViolation } from '../src/store/db.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Personal sessions (issue 10, seed 003's personal threads): one active session per
// (tenant, user, agent), enforced by the database; archive starts a fresh one.
let server: TestServer;
const keys = { K_ALICE: 'alice-key', K_BOB: 'bob-key', K_GINA: 'gina-key' };
const alice = { authorization: 'Bearer alice-key' };
const bob = { authorization: 'Bearer bob-key' };
const gina = { authorization: 'Bearer gina-key' };

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice' },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob' },
          { key_env: 'K_GINA', tenant: 'globex', user: 'alice' },
        ],
      },
      agents: { default: {}, coach: { greeting: 'Hi, I am your coach.' } },
    },
    keys,
  );
});
afterAll(async () => {
  await server.close();
});

const personal = (who: Record<string, string>, agent = 'coach') =>
  request(server.url, 'POST', `/api/v1/agents/${agent}/personal`, undefined, who);
const archive = (who: Record<string, string>, agent = 'coach') =>
  request(server.url, 'POST', `/api/v1/agents/${agent}/personal/archive`, undefined, who);

describe('personal sessions', () => {
  it('returns the one active session, creating it once, even for concurrent first calls', async () => {
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => personal(alice)));
    const ids = new Set(answers.map((answer) => answer.body.session_id));
    expect(ids.size).toBe(1);
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(4);
    const [first] = answers;
    expect(first?.body).toMatchObject({ agent: 'coach', latest_sequence: 1 });
    expect((await personal(alice)).body.session_id).toBe(first?.body.session_id);

    // Others have their own: another user, another tenant (same user name), another agent.
    const others = [await personal(bob), await personal(gina), await personal(alice, 'default')];
    for (const other of others) {
      expect(other.status).toBe(201);
      expect(other.body.session_id).not.toBe(first?.body.session_id);
    }
    // globex cannot read acme's personal session.
    const foreign = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${first?.body.session_id}`,
      undefined,
      gina,
    );
    expect(foreign.status).toBe(404);
  });

  it('archives it, so the next call starts a fresh one', async () => {
    const before = (await personal(bob)).body.session_id;
    const archived = await archive(bob);
    expect(archived.status).toBe(200);
    expect(archived.body).toEqual({ session_id: before, archived: true });
    const again = await archive(bob);
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('personal_session_not_found');
    const fresh = await personal(bob);
    expect(fresh.status).toBe(201);
    expect(fresh.body.session_id).not.toBe(before);
    // The archived one is still there, readable like any session.
    expect(
      (await request(server.url, 'GET', `/api/v1/chat/sessions/${before}`, undefined, bob)).status,
    ).toBe(200);
  });

  it('is unique by a database constraint, and refuses unknown agents', async () => {
    // A second active row for (acme, alice, coach), written behind the API's back.
    await server.db.query(
      `insert into sessions (session_id, tenant, agent) values ('personal_dup', 'acme', 'coach')`,
    );
    const second = await server.db
      .query(
        `insert into personal_sessions (session_id, tenant, user_name, agent)
         values ('personal_dup', 'acme', 'alice', 'coach')`,
      )
      .then(
        () => null,
        (caught: unknown) => caught,
      );
    expect(isUniqueViolation(second)).toBe(true);
    const unknown = await personal(alice, 'nobody');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('unknown_agent');
  });
});
