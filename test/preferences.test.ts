import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localTime, userContext } from '../src/runtime/userContext.js';
import { readHistory } from '../src/store/readHistory.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { ProviderServer } from './support/providerServer.js';
import { providerKey } from './support/providerKinds.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// A user's preferences (docs/web.md, "Preferences"), on the engine the suite runs on:
// checked whole, stored whole per tenant and user, and the language and time zone told
// to the agents the user talks to (seen in the request a real provider client sends).

let server: TestServer;
let providers: ProviderServer;
const keys = { alice: 'alice-key', bob: 'bob-key', globex: 'globex-key' };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const path = '/api/v1/me/preferences';

beforeAll(async () => {
  providers = await ProviderServer.start();
  server = await startTestServer(
    {
      // Room for a desktop layout over its own 64 KiB limit.
      server: { body_limit_bytes: 256 * 1024 },
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gus', roles: [] },
        ],
      },
      providers: {
        demo: { kind: 'demo' },
        compat: {
          kind: 'openai_compatible',
          api_key_env: 'TEST_PROVIDER_KEY',
          base_url: `${providers.url}/v1`,
        },
      },
      agents: {
        default: { model: 'demo/echo', visibility: 'private' },
        gateway: { model: 'compat/any-model' },
      },
    },
    { K_ALICE: keys.alice, K_BOB: keys.bob, K_GLOBEX: keys.globex, TEST_PROVIDER_KEY: providerKey },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
  await providers?.close();
});

const users = async () =>
  (await server.db.query<{ n: number }>('select count(*)::int as n from users')).rows[0]?.n;

async function sessionOf(key: string): Promise<string> {
  const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, auth(key));
  expect(created.status).toBe(201);
  return created.body.session_id as string;
}

describe('preferences', () => {
  it('are the defaults until saved, then what was saved, canonical', async () => {
    const fresh = await request(server.url, 'GET', path, undefined, auth(keys.bob));
    expect(fresh.status).toBe(200);
    expect(fresh.body).toEqual({
      workspace_id: null,
      active_agent: null,
      active_session_id: null,
      system_voice: null,
      desktop: {},
      language: null,
      timezone: null,
    });
    const sessionId = await sessionOf(keys.bob);
    const saved = await request(
      server.url,
      'PUT',
      path,
      {
        active_agent: 'default',
        active_session_id: sessionId,
        desktop: { panes: [{ kind: 'inbox', width: 320 }] },
        language: 'de-ch',
        timezone: 'Europe/Zurich',
        system_voice: 'espeak/en',
      },
      auth(keys.bob),
    );
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({
      language: 'de-CH',
      active_session_id: sessionId,
      system_voice: 'espeak/en',
    });
    const read = await request(server.url, 'GET', path, undefined, auth(keys.bob));
    expect(read.body).toEqual(saved.body);
    // PUT replaces: what is left out goes back to its default.
    const replaced = await request(server.url, 'PUT', path, { language: 'fr' }, auth(keys.bob));
    expect(replaced.body).toMatchObject({ language: 'fr', timezone: null, desktop: {} });
    // Another user of the tenant, and another tenant, have their own.
    const other = await request(server.url, 'GET', path, undefined, auth(keys.globex));
    expect(other.body.language).toBeNull();
  });

  it('refuses bad values naming the field, and writes nothing', async () => {
    const before = await users();
    const cases: [Record<string, unknown>, number, string, string][] = [
      [{ language: 'not a tag!' }, 400, 'invalid_request', 'language'],
      [{ timezone: 'Mars/Olympus_Mons' }, 400, 'invalid_request', 'timezone'],
      [{ timezone: '+02:00' }, 400, 'invalid_request', 'timezone'],
      [{ desktop: { blob: 'x'.repeat(70_000) } }, 400, 'invalid_request', 'desktop'],
      [{ desktop: [1, 2] }, 400, 'invalid_request', 'desktop'],
      [{ workspace_id: 7 }, 400, 'invalid_request', 'workspace_id'],
      [{ workspace_id: 'ws_missing' }, 404, 'workspace_not_found', 'workspace_id'],
      [{ theme: 'dark' }, 400, 'invalid_request', ''],
      [{ active_agent: 'nobody' }, 404, 'unknown_agent', 'active_agent'],
      [{ active_session_id: 'sess_missing' }, 404, 'session_not_found', 'active_session_id'],
      // A voice must be one of the catalog (GET /api/v1/voices); null clears it.
      [{ system_voice: 'espeak/xx-nowhere' }, 400, 'invalid_request', 'system_voice'],
      [{ system_voice: 'alloy' }, 400, 'invalid_request', 'system_voice'],
      [{ system_voice: 7 }, 400, 'invalid_request', 'system_voice'],
    ];
    for (const [body, status, code, field] of cases) {
      const answer = await request(server.url, 'PUT', path, body, auth(keys.alice));
      expect(answer.status, JSON.stringify(body).slice(0, 60)).toBe(status);
      expect(answer.body.error).toBe(code);
      expect(answer.body.message).toContain(field);
    }
    expect(await users()).toBe(before);
  });

  it("answers another user's private session or another tenant's exactly like a missing one", async () => {
    const bobs = await sessionOf(keys.bob);
    const missing = await request(
      server.url,
      'PUT',
      path,
      { active_session_id: 'sess_nowhere' },
      auth(keys.alice),
    );
    for (const key of [keys.alice, keys.globex]) {
      const foreign = await request(
        server.url,
        'PUT',
        path,
        { active_session_id: bobs },
        auth(key),
      );
      expect(foreign.status).toBe(missing.status);
      expect(foreign.body).toEqual(missing.body);
    }
  });

  it('drops an active session that was deleted since', async () => {
    const sessionId = await sessionOf(keys.alice);
    await request(server.url, 'PUT', path, { active_session_id: sessionId }, auth(keys.alice));
    const deleted = await request(
      server.url,
      'DELETE',
      `/api/v1/chat/sessions/${sessionId}`,
      undefined,
      auth(keys.alice),
    );
    expect(deleted.status).toBe(204);
    const read = await request(server.url, 'GET', path, undefined, auth(keys.alice));
    expect(read.body.active_session_id).toBeNull();
  });
});

describe('the profile', () => {
  it('is null until set; PATCH changes what it names, null clears; bad values write nothing', async () => {
    const me = async () =>
      (await request(server.url, 'GET', '/api/v1/me', undefined, auth(keys.globex))).body;
    expect(await me()).toMatchObject({ user: 'gus', display_name: null, avatar_url: null });
    const named = await request(
      server.url,
      'PATCH',
      '/api/v1/me',
      { display_name: '  Gus Globex ' },
      auth(keys.globex),
    );
    expect(named.status).toBe(200);
    expect(named.body).toMatchObject({ display_name: 'Gus Globex', avatar_url: null });
    await request(
      server.url,
      'PATCH',
      '/api/v1/me',
      { avatar_url: 'https://example.com/gus.png' },
      auth(keys.globex),
    );
    expect(await me()).toMatchObject({
      display_name: 'Gus Globex',
      avatar_url: 'https://example.com/gus.png',
    });
    // The transcript names a person's messages by the author's profile, as it is now.
    const sessionId = await sessionOf(keys.globex);
    const admitted = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { session_id: sessionId, turn_id: 'profile_1', message: 'hello from gus' },
      auth(keys.globex),
    );
    expect(admitted.status).toBe(202);
    const transcript = async () =>
      (
        await request(
          server.url,
          'GET',
          `/api/v1/chat/sessions/${sessionId}/messages`,
          undefined,
          auth(keys.globex),
        )
      ).body.items as Record<string, unknown>[];
    expect((await transcript()).find((item) => item.role === 'user')).toMatchObject({
      author: 'gus',
      author_display_name: 'Gus Globex',
      author_avatar_url: 'https://example.com/gus.png',
    });
    // A reply is the agent's: no person's profile on it.
    const reply = await until(
      transcript,
      (items) => items.some((item) => item.role === 'assistant'),
      'the reply',
    );
    expect(reply.find((item) => item.role === 'assistant')).toMatchObject({
      author_display_name: null,
      author_avatar_url: null,
    });
    const before = await me();
    for (const body of [
      { avatar_url: 'javascript:alert(1)' },
      { avatar_url: 'http://example.com/a.png' },
      { avatar_url: `https://example.com/${'a'.repeat(2048)}.png` },
      // A data: URL must be an image of its declared type, and small.
      { avatar_url: `data:image/png;base64,${Buffer.from('<svg/>').toString('base64')}` },
      { avatar_url: `data:image/svg+xml;base64,${Buffer.from('<svg/>').toString('base64')}` },
      { avatar_url: `data:image/png;base64,${pngBytes(60_000).toString('base64')}` },
      { display_name: '' },
      { display_name: 'x'.repeat(81) },
      {},
      { roles: ['admin'] },
    ]) {
      const refused = await request(server.url, 'PATCH', '/api/v1/me', body, auth(keys.globex));
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error).toBe('invalid_request');
    }
    expect(await me()).toEqual(before);
    // A small picture inline is accepted (what the web app can show).
    const inline = `data:image/png;base64,${pngBytes(200).toString('base64')}`;
    const pictured = await request(
      server.url,
      'PATCH',
      '/api/v1/me',
      { avatar_url: inline },
      auth(keys.globex),
    );
    expect(pictured.status).toBe(200);
    expect(pictured.body.avatar_url).toBe(inline);
    const back = await request(
      server.url,
      'PATCH',
      '/api/v1/me',
      { avatar_url: before.avatar_url },
      auth(keys.globex),
    );
    expect(back.body).toEqual(before);
    await request(server.url, 'PATCH', '/api/v1/me', { display_name: null }, auth(keys.globex));
    expect(await me()).toMatchObject({
      display_name: null,
      avatar_url: 'https://example.com/gus.png',
    });
    expect((await transcript()).find((item) => item.role === 'user')).toMatchObject({
      author_display_name: null,
      author_avatar_url: 'https://example.com/gus.png',
    });
    // The roles stay the key's: a profile is not a principal.
    expect((await me()).roles).toEqual([]);
  });
});

describe("the user's language and local time reach the agent", () => {
  it('tells each saved user of a burst, and no one else', async () => {
    const now = new Date('2026-12-03T09:15:00Z');
    expect(localTime(now, 'Europe/Zurich')).toBe('Thursday 3 December 2026, 10:15');
    await request(
      server.url,
      'PUT',
      path,
      { language: 'de-CH', timezone: 'Europe/Zurich' },
      auth(keys.alice),
    );
    // What the start of a burst's attempt reads, for these authors.
    const saved = async (tenant: string, authors: string[]) =>
      (
        await readHistory(server.db, {
          sessionId: 'none',
          tenant,
          historyBefore: 0,
          historyLimit: 0,
          historyBytes: 0,
          authors,
        })
      ).preferences;
    expect(
      userContext(await saved('acme', ['alice', 'bob', 'carol']), ['alice', 'bob', 'carol'], now),
    ).toBe(
      [
        'The user alice prefers the language de-CH and has the local time Thursday 3 December 2026, 10:15 (Europe/Zurich).',
        'The user bob prefers the language fr.',
      ].join('\n'),
    );
    expect(userContext(await saved('globex', ['alice']), ['alice'], now)).toBe('');
  });

  it("is in the system prompt a real provider client sends for the user's turn", async () => {
    providers.on('POST', '/v1/chat/completions', { stream: 'openai-chat/text.txt' });
    const admitted = await request(
      server.url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: `pref_${Date.now()}`, agent: 'gateway', message: 'when is tomorrow morning?' },
      auth(keys.alice),
    );
    expect(admitted.status).toBe(202);
    const sent = await until(
      () => providers.requests.filter((each) => each.path === '/v1/chat/completions'),
      (found) => found.length > 0,
      'the provider call',
    );
    const body = JSON.parse(sent[0]?.body ?? '{}') as {
      messages: { role: string; content: string }[];
    };
    const system = body.messages.find((message) => message.role === 'system')?.content ?? '';
    expect(system).toMatch(
      /The user alice prefers the language de-CH and has the local time \w+ \d+ \w+ \d{4}, \d\d:\d\d \(Europe\/Zurich\)\./,
    );
  });
});

/** `size` bytes that begin as a PNG does (the magic bytes are what is checked). */
function pngBytes(size: number): Buffer {
  const bytes = Buffer.alloc(size, 7);
  Buffer.from('\x89PNG\r\n\x1a\n', 'latin1').copy(bytes);
  return bytes;
}
