import { afterEach, describe, expect, it } from 'vitest';
import { Directory } from '../src/agents/directory.js';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import type { Db } from '../src/store/db.js';
import { openPostgres } from '../src/store/postgres.js';
import { Wakeups } from '../src/store/wakeups.js';
import { testConfig } from './support/config.js';
import { engine, freshStorage } from './support/db.js';
import { until } from './support/poll.js';
import { request } from './support/server.js';

// Agents and missions at runtime (issue 10): definitions in the database, seeded from the
// configuration with a content hash; a tenant's admin edits one (customized: a changed
// configuration no longer overwrites it), deletes it (the shipped one is restored), or
// creates one; workers use an edit from their next turn, without a restart.
const log = createLogger({ level: 'silent' });
const keys = { K_ALICE: 'alice-key', K_CAROL: 'carol-key', K_GINA: 'gina-key' };
const alice = { authorization: 'Bearer alice-key' };
const carol = { authorization: 'Bearer carol-key' };
const gina = { authorization: 'Bearer gina-key' };
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const clean of cleanup.splice(0).reverse()) await clean();
});
let counter = 0;

function configFor(storage: { url: string | null; dataDir: string }, shipped: string) {
  return testConfig(
    storage,
    {
      runtime: { execution_recheck_ms: 300 },
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: ['admin'] },
          { key_env: 'K_CAROL', tenant: 'acme', user: 'carol', roles: [] },
          { key_env: 'K_GINA', tenant: 'globex', user: 'gina', roles: ['admin'] },
        ],
      },
      agents: { default: {}, helper: { completion_text: shipped } },
      missions: { report: { prompt: 'Report.', agent: 'helper' } },
    },
    keys,
  );
}

async function start(
  storage: { url: string | null; dataDir: string },
  shipped: string,
): Promise<Running> {
  return startProcess(configFor(storage, shipped), { api: true, worker: true }, log, {
    env: { ...process.env, ...keys },
  });
}

async function fresh(shipped = 'shipped v1') {
  const storage = await freshStorage();
  cleanup.push(() => storage.drop());
  const running = await start(storage.storage, shipped);
  cleanup.push(() => running.stop());
  return { running, url: running.url as string, storage: storage.storage };
}

/** One turn with `agent`; the reply (its completion_text shows which definition ran). */
async function reply(url: string, who: Record<string, string>, agent: string): Promise<string> {
  const admitted = await request(
    url,
    'POST',
    '/api/v1/chat/turns',
    { turn_id: `def_${counter++}`, agent, message: 'hello' },
    who,
  );
  expect(admitted.status).toBe(202);
  const messages = await until(
    () =>
      request(
        url,
        'GET',
        `/api/v1/chat/sessions/${admitted.body.session_id}/messages`,
        undefined,
        who,
      ),
    (answer) => answer.body.items?.some((item: any) => item.role === 'assistant'),
    'the reply',
  );
  return messages.body.items.find((item: any) => item.role === 'assistant').content;
}

const agentView = async (url: string, who: Record<string, string>, name: string) =>
  (await request(url, 'GET', '/api/v1/agents', undefined, who)).body.items.find(
    (item: any) => item.name === name,
  );

describe('agents at runtime', () => {
  it('an admin edits an agent: the next turn uses it; other tenants keep the shipped one', async () => {
    const { url } = await fresh();
    expect(await reply(url, alice, 'helper')).toBe('shipped v1');
    const shipped = await agentView(url, alice, 'helper');
    expect(shipped).toMatchObject({ is_customized: false, namespace: 'default' });
    expect(shipped.content_hash).toMatch(/^[0-9a-f]{64}$/);

    const edit = { completion_text: 'edited by acme', namespace: 'support' };
    expect((await request(url, 'PUT', '/api/v1/agents/helper', edit, carol)).status).toBe(403);
    const put = await request(url, 'PUT', '/api/v1/agents/helper', edit, alice);
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      name: 'helper',
      namespace: 'support',
      is_customized: true,
      shipped_content_hash: shipped.content_hash,
      shipped_changed: false,
      updated_by: 'alice',
      definition: { completion_text: 'edited by acme', model: 'demo/echo' },
    });
    expect(await reply(url, alice, 'helper')).toBe('edited by acme');
    expect(await reply(url, gina, 'helper')).toBe('shipped v1');

    // Namespaces group agents in listings.
    const support = await request(url, 'GET', '/api/v1/agents?namespace=support', undefined, carol);
    expect(support.body.items.map((item: any) => item.name)).toEqual(['helper']);
    // The definition (instructions included) is for admins only.
    expect((await request(url, 'GET', '/api/v1/agents/helper', undefined, carol)).status).toBe(403);
    expect(
      (await request(url, 'GET', '/api/v1/agents/helper', undefined, alice)).body.definition,
    ).toMatchObject(edit);
  });

  it('an edited agent survives a configuration change; a restored one takes it', async () => {
    const storage = await freshStorage();
    cleanup.push(() => storage.drop());
    const first = await start(storage.storage, 'shipped v1');
    await request(
      first.url as string,
      'PUT',
      '/api/v1/agents/helper',
      { completion_text: 'edited' },
      alice,
    );
    await first.stop();

    const second = await start(storage.storage, 'shipped v2');
    cleanup.push(() => second.stop());
    const url = second.url as string;
    expect(await reply(url, alice, 'helper')).toBe('edited');
    expect(await reply(url, gina, 'helper')).toBe('shipped v2');
    expect(await agentView(url, alice, 'helper')).toMatchObject({
      is_customized: true,
      shipped_changed: true,
    });

    const restored = await request(url, 'DELETE', '/api/v1/agents/helper', undefined, alice);
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({ restored: true, is_customized: false });
    expect(await reply(url, alice, 'helper')).toBe('shipped v2');
    const again = await request(url, 'DELETE', '/api/v1/agents/helper', undefined, alice);
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('not_customized');
  });

  it("creates a tenant's own agent that no other tenant can see", async () => {
    const { url } = await fresh();
    const created = await request(
      url,
      'PUT',
      '/api/v1/agents/secret',
      { instructions: 'Private.', greeting: 'Psst.', icon: 'https://example.com/secret.png' },
      alice,
    );
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ is_customized: true, shipped_content_hash: null });
    expect(await agentView(url, carol, 'secret')).toMatchObject({
      greeting: 'Psst.',
      icon: 'https://example.com/secret.png',
    });

    // globex: the same 404 as an agent that does not exist, everywhere.
    const missing = await request(url, 'GET', '/api/v1/agents/nothing', undefined, gina);
    const foreign = await request(url, 'GET', '/api/v1/agents/secret', undefined, gina);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ ...missing.body, message: 'no agent named "secret"' });
    expect(await agentView(url, gina, 'secret')).toBeUndefined();
    const turn = await request(
      url,
      'POST',
      '/api/v1/chat/turns',
      { turn_id: `def_${counter++}`, agent: 'secret', message: 'hi' },
      gina,
    );
    expect(turn.status).toBe(404);
    expect((await request(url, 'DELETE', '/api/v1/agents/secret', undefined, gina)).status).toBe(
      404,
    );
    expect(
      (await request(url, 'POST', '/api/v1/agents/secret/personal', undefined, gina)).status,
    ).toBe(404);

    // Deleting a created agent removes it.
    const deleted = await request(url, 'DELETE', '/api/v1/agents/secret', undefined, alice);
    expect(deleted.body).toEqual({ name: 'secret', deleted: true });
    expect(await agentView(url, alice, 'secret')).toBeUndefined();
  });

  it('refuses a bad definition, naming the key, writing nothing', async () => {
    const { url, running } = await fresh();
    const count = async () =>
      (await running.db.query<{ n: number }>('select count(*)::int as n from definitions')).rows[0]
        ?.n;
    const before = await count();
    const cases: [string, unknown, string][] = [
      ['agents', { bogus: 1 }, 'agents.helper'],
      ['agents', { model: 'nowhere/model' }, 'agents.helper.model: no provider named "nowhere"'],
      ['agents', { tools: { teleport: 'allow' } }, 'agents.helper.tools.teleport'],
      ['agents', { temperature: 'hot' }, 'agents.helper.temperature'],
      ['agents', { icon: 'http://example.com/a.png' }, 'agents.helper.icon'],
      ['agents', { icon: 'javascript:alert(1)' }, 'agents.helper.icon'],
      // A data: URL whose bytes are not the type it names.
      ['agents', { icon: 'data:image/png;base64,aGVsbG8=' }, 'agents.helper.icon'],
      [
        'missions',
        { prompt: 'x', agent: 'ghost' },
        'missions.helper.agent: no agent named "ghost"',
      ],
      ['missions', { prompt: 'x', max_iterations: 1000 }, 'missions.helper.max_iterations'],
      ['missions', {}, 'missions.helper.prompt'],
    ];
    for (const [kind, body, message] of cases) {
      const answer = await request(url, 'PUT', `/api/v1/${kind}/helper`, body, alice);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error).toBe('invalid_definition');
      expect(answer.body.message).toContain(message);
    }
    expect(
      (await request(url, 'PUT', '/api/v1/missions/bad name', { prompt: 'x' }, alice)).status,
    ).toBe(400);
    expect(await count()).toBe(before);
  });
});

describe('missions at runtime', () => {
  it('an edited mission is dispatched as edited; DELETE restores the shipped one', async () => {
    const { url } = await fresh();
    const run = async () => {
      const dispatched = await request(
        url,
        'POST',
        '/api/v1/missions/report/executions',
        { execution_id: `m_${counter++}` },
        alice,
      );
      expect(dispatched.status).toBe(202);
      const done = await until(
        () =>
          request(
            url,
            'GET',
            `/api/v1/executions/${dispatched.body.execution_id}`,
            undefined,
            alice,
          ),
        (answer) => answer.body.status === 'success',
        'the execution',
      );
      return done.body;
    };
    const put = await request(
      url,
      'PUT',
      '/api/v1/missions/report',
      { prompt: 'Report twice.', agent: 'default' },
      alice,
    );
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      is_customized: true,
      definition: { prompt: 'Report twice.' },
    });
    const edited = await run();
    expect(edited).toMatchObject({
      agent: 'default',
      result: { content: 'You said: Report twice.' },
    });
    const listed = await request(url, 'GET', '/api/v1/missions', undefined, carol);
    expect(listed.body.items[0]).toMatchObject({
      name: 'report',
      agent: 'default',
      is_customized: true,
    });
    // globex still has the shipped mission.
    const theirs = await request(url, 'GET', '/api/v1/missions', undefined, gina);
    expect(theirs.body.items[0]).toMatchObject({
      name: 'report',
      agent: 'helper',
      is_customized: false,
    });

    expect((await request(url, 'DELETE', '/api/v1/missions/report', undefined, alice)).status).toBe(
      200,
    );
    const restored = await run();
    expect(restored).toMatchObject({ agent: 'helper', result: { content: 'shipped v1' } });
  });
});

describe('directories in other processes', () => {
  it('pick up an edit without a restart (wake-up, or poll)', async () => {
    const { url, running, storage } = await fresh();
    let db: Db = running.db;
    if (engine === 'postgres') {
      db = await openPostgres(storage.url as string, 2);
      cleanup.push(() => db.close());
    }
    const wakeups = new Wakeups(db);
    await wakeups.start();
    cleanup.push(() => wakeups.stop());
    const other = new Directory({
      db,
      config: configFor(storage, 'shipped v1'),
      log,
      env: { ...process.env, ...keys },
      pollMs: 60_000,
    });
    await other.seedAndLoad();
    other.start(wakeups);
    cleanup.push(async () => other.stop());
    expect(other.agents.get('acme', 'helper')?.completionText).toBe('shipped v1');
    await request(url, 'PUT', '/api/v1/agents/helper', { completion_text: 'everywhere' }, alice);
    // The poll is a minute away: the wake-up is what brings it.
    await until(
      () => other.agents.get('acme', 'helper')?.completionText,
      (text) => text === 'everywhere',
      'the other directory to see the edit',
    );
    expect(other.agents.get('globex', 'helper')?.completionText).toBe('shipped v1');
  });
});
