import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ParleyEvent } from '../src/protocol/events.js';
import { readEvents } from '../src/store/readEvents.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// UI panels (docs/web.md, "Panels") on the engine the suite runs on: the palette checks
// every document (an invalid one names its path), panels made through the API and by an
// agent's `show_panel` / `update_panel` (buffered, journaled with the reply), who sees and
// who changes them, and a form that submits back to its conversation as a turn.

let server: TestServer;
const keys = { alice: 'alice-key', bob: 'bob-key', admin: 'admin-key', globex: 'globex-key' };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
          { key_env: 'K_ADMIN', tenant: 'acme', user: 'ada', roles: ['admin'] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gus', roles: [] },
        ],
      },
      agents: {
        default: {
          model: 'demo/echo',
          visibility: 'private',
          tools: { show_panel: 'allow', update_panel: 'allow' },
        },
      },
    },
    { K_ALICE: keys.alice, K_BOB: keys.bob, K_ADMIN: keys.admin, K_GLOBEX: keys.globex },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

const orders = {
  type: 'stack',
  children: [
    { type: 'markdown', text: '# Orders' },
    { type: 'table', columns: ['id', 'state'], rows: [['A17', 'shipped']] },
  ],
};
const panelCount = async () =>
  (await server.db.query<{ n: number }>('select count(*)::int as n from panels')).rows[0]?.n;

async function sessionOf(key: string): Promise<string> {
  const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, auth(key));
  expect(created.status).toBe(201);
  return created.body.session_id as string;
}

let turns = 0;
/** Sends `message` in the session and waits for its turn's `done`; the session's events. */
async function say(key: string, sessionId: string, message: string): Promise<ParleyEvent[]> {
  const turnId = `panel-turn-${++turns}`;
  const admitted = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    { session_id: sessionId, turn_id: turnId, message },
    auth(key),
  );
  expect(admitted.status).toBe(202);
  return until(
    () => readEvents(server.db, sessionId, 0, 10_000),
    (events) => events.some((event) => event.type === 'done' && event.turn_ids.includes(turnId)),
    `the turn ${turnId} to finish`,
  );
}

describe('the palette', () => {
  it('lists every component with its JSON Schema', async () => {
    const listed = await request(
      server.url,
      'GET',
      '/api/v1/panels/palette',
      undefined,
      auth(keys.bob),
    );
    expect(listed.status).toBe(200);
    const types = listed.body.components.map((component: { type: string }) => component.type);
    expect(types).toEqual(
      expect.arrayContaining([
        'stack',
        'markdown',
        'key_value',
        'table',
        'chart',
        'form',
        'image',
        'progress',
        'link_list',
      ]),
    );
    const table = listed.body.components.find((c: { type: string }) => c.type === 'table');
    expect(table.schema.properties.columns.type).toBe('array');
    expect(table.schema.required).toEqual(expect.arrayContaining(['type', 'columns', 'rows']));
  });

  it('refuses an invalid document naming the path, and writes nothing', async () => {
    const sessionId = await sessionOf(keys.alice);
    const before = await panelCount();
    const cases: [unknown, string][] = [
      [
        {
          type: 'stack',
          children: [orders.children[0], { type: 'table', columns: ['a', 'b'], rows: [['1']] }],
        },
        'document.children[1].rows[0]',
      ],
      [{ type: 'gauge' }, 'document.type'],
      [{ type: 'progress', value: 120, max: 100 }, 'document.value'],
      [
        { type: 'link_list', links: [{ label: 'x', href: 'javascript:alert(1)' }] },
        'document.links[0].href',
      ],
      [
        { type: 'chart', kind: 'bar', labels: ['a', 'b'], series: [{ name: 's', values: [1] }] },
        'document.series[0].values',
      ],
      [
        { type: 'form', name: 'f', fields: [{ name: 'x', kind: 'select' }] },
        'document.fields[0].options',
      ],
      ['# just text', 'document'],
    ];
    for (const [document, path] of cases) {
      const made = await request(
        server.url,
        'POST',
        '/api/v1/panels',
        { title: 'Bad', scope: 'session', session_id: sessionId, document },
        auth(keys.alice),
      );
      expect(made.status, path).toBe(400);
      expect(made.body.error).toBe('invalid_panel');
      expect(made.body.field).toBe(path);
    }
    let deep: unknown = { type: 'markdown', text: 'x' };
    for (let level = 0; level < 10; level++) deep = { type: 'stack', children: [deep] };
    const tooDeep = await request(
      server.url,
      'POST',
      '/api/v1/panels',
      { title: 'Deep', scope: 'workspace', document: deep },
      auth(keys.alice),
    );
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.error).toBe('invalid_panel');
    expect(await panelCount()).toBe(before);
  });
});

describe('panels through the API', () => {
  it('makes, lists newest first, replaces and deletes; changes are journaled in the session', async () => {
    const sessionId = await sessionOf(keys.alice);
    const made = await request(
      server.url,
      'POST',
      '/api/v1/panels',
      { title: 'Orders', scope: 'session', session_id: sessionId, document: orders },
      auth(keys.alice),
    );
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({
      owner: 'alice',
      scope: 'session',
      session_id: sessionId,
      workspace_id: null,
      title: 'Orders',
      channel: 'agency.panel',
      document: { type: 'stack', direction: 'vertical', children: orders.children },
    });
    const second = await request(
      server.url,
      'POST',
      '/api/v1/panels',
      { title: 'Desk note', scope: 'workspace', document: { type: 'markdown', text: 'hi' } },
      auth(keys.alice),
    );
    expect(second.status).toBe(201);

    const mine = await request(server.url, 'GET', '/api/v1/panels', undefined, auth(keys.alice));
    const ids = mine.body.items.map((panel: { id: string }) => panel.id);
    expect(ids.indexOf(second.body.id)).toBeLessThan(ids.indexOf(made.body.id));
    const workspaceOnly = await request(
      server.url,
      'GET',
      '/api/v1/panels?scope=workspace',
      undefined,
      auth(keys.alice),
    );
    expect(
      workspaceOnly.body.items.every((panel: { scope: string }) => panel.scope === 'workspace'),
    ).toBe(true);
    const paged = await request(
      server.url,
      'GET',
      '/api/v1/panels?limit=1',
      undefined,
      auth(keys.alice),
    );
    expect(paged.body.items).toHaveLength(1);
    const rest = await request(
      server.url,
      'GET',
      `/api/v1/panels?limit=1&cursor=${paged.body.next_cursor}`,
      undefined,
      auth(keys.alice),
    );
    expect(rest.body.items[0].id).not.toBe(paged.body.items[0].id);
    const ofSession = await request(
      server.url,
      'GET',
      `/api/v1/panels?session_id=${sessionId}`,
      undefined,
      auth(keys.alice),
    );
    expect(ofSession.body.items.map((panel: { id: string }) => panel.id)).toEqual([made.body.id]);

    const replaced = await request(
      server.url,
      'PUT',
      `/api/v1/panels/${made.body.id}`,
      { title: 'Orders today', document: { type: 'progress', label: 'Shipped', value: 3, max: 4 } },
      auth(keys.alice),
    );
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      title: 'Orders today',
      document: { type: 'progress', value: 3 },
    });
    const deleted = await request(
      server.url,
      'DELETE',
      `/api/v1/panels/${made.body.id}`,
      undefined,
      auth(keys.alice),
    );
    expect(deleted.status).toBe(204);
    const gone = await request(
      server.url,
      'GET',
      `/api/v1/panels/${made.body.id}`,
      undefined,
      auth(keys.alice),
    );
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe('panel_not_found');

    const journal = (await readEvents(server.db, sessionId, 0, 1000)).filter(
      (event) => event.type === 'panel',
    );
    expect(journal.map((event) => event.type === 'panel' && [event.action, event.by])).toEqual([
      ['shown', 'user'],
      ['updated', 'user'],
      ['deleted', 'user'],
    ]);
  });

  it('is seen by who may see its session or its owner, changed only by its owner or an admin', async () => {
    const sessionId = await sessionOf(keys.alice);
    const made = await request(
      server.url,
      'POST',
      '/api/v1/panels',
      { title: 'Private', scope: 'session', session_id: sessionId, document: orders },
      auth(keys.alice),
    );
    const panelPath = `/api/v1/panels/${made.body.id}`;
    // bob may not see alice's private session, so not its panel either: like a missing one.
    for (const key of [keys.bob, keys.globex]) {
      const seen = await request(server.url, 'GET', panelPath, undefined, auth(key));
      expect(seen.status).toBe(404);
      expect(seen.body.error).toBe('panel_not_found');
      const put = await request(
        server.url,
        'PUT',
        panelPath,
        { title: 'x', document: orders },
        auth(key),
      );
      expect(put.status).toBe(404);
      const listed = await request(
        server.url,
        'GET',
        `/api/v1/panels?session_id=${sessionId}`,
        undefined,
        auth(key),
      );
      expect(listed.status).toBe(404);
    }
    // A panel in someone else's session is refused like the session.
    const intoTheirs = await request(
      server.url,
      'POST',
      '/api/v1/panels',
      { title: 'x', scope: 'session', session_id: sessionId, document: orders },
      auth(keys.bob),
    );
    expect(intoTheirs.status).toBe(404);
    expect(intoTheirs.body.error).toBe('session_not_found');
    // The admin sees every session of the tenant, so the panel, and may change it.
    const byAdmin = await request(
      server.url,
      'PUT',
      panelPath,
      { title: 'Checked', document: orders },
      auth(keys.admin),
    );
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.owner).toBe('alice');
  });
});

describe('panels by agents', () => {
  it('show_panel and update_panel land with the reply, as panel events', async () => {
    const sessionId = await sessionOf(keys.alice);
    const events = await say(keys.alice, sessionId, `/panel ${JSON.stringify(orders)}`);
    const shown = events.find((event) => event.type === 'panel');
    expect(shown).toMatchObject({ action: 'shown', scope: 'session', title: 'Panel', by: 'tool' });
    const panelId = shown?.type === 'panel' ? shown.panel_id : '';
    // Journaled before the reply's done, by the same commit.
    const done = events.findLast((event) => event.type === 'done');
    expect(shown!.sequence).toBeLessThan(done!.sequence);
    const stored = await request(
      server.url,
      'GET',
      `/api/v1/panels/${panelId}`,
      undefined,
      auth(keys.alice),
    );
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({ owner: 'alice', scope: 'session', session_id: sessionId });

    const update = { panel_id: panelId, document: { type: 'progress', value: 1, max: 2 } };
    const after = await say(keys.alice, sessionId, `/tool update_panel ${JSON.stringify(update)}`);
    expect(
      after
        .filter((event) => event.type === 'panel')
        .map((event) => event.type === 'panel' && event.action),
    ).toEqual(['shown', 'updated']);
    const changed = await request(
      server.url,
      'GET',
      `/api/v1/panels/${panelId}`,
      undefined,
      auth(keys.alice),
    );
    expect(changed.body.document).toEqual({ type: 'progress', value: 1, max: 2 });

    // An ephemeral panel is journaled, never stored; an invalid document shows nothing.
    const before = await panelCount();
    const ephemeral = {
      title: 'Now',
      scope: 'ephemeral',
      document: { type: 'markdown', text: 'live' },
    };
    const third = await say(keys.alice, sessionId, `/panel ${JSON.stringify(ephemeral)}`);
    expect(third.filter((event) => event.type === 'panel').at(-1)).toMatchObject({
      action: 'shown',
      scope: 'ephemeral',
    });
    await say(keys.alice, sessionId, `/panel {"type":"table","columns":["a"],"rows":[["1","2"]]}`);
    expect(await panelCount()).toBe(before);
    const messages = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages`,
      undefined,
      auth(keys.alice),
    );
    expect(JSON.stringify(messages.body)).toContain('document.rows[0]');
  });

  it("refuses update_panel of a panel that is not the conversation's or the user's", async () => {
    const theirs = await request(
      server.url,
      'POST',
      '/api/v1/panels',
      { title: 'Bob', scope: 'workspace', document: orders },
      auth(keys.bob),
    );
    const sessionId = await sessionOf(keys.alice);
    const update = { panel_id: theirs.body.id, title: 'Taken' };
    await say(keys.alice, sessionId, `/tool update_panel ${JSON.stringify(update)}`);
    const untouched = await request(
      server.url,
      'GET',
      `/api/v1/panels/${theirs.body.id}`,
      undefined,
      auth(keys.bob),
    );
    expect(untouched.body.title).toBe('Bob');
  });
});

describe('a form in a panel', () => {
  const form = {
    type: 'form',
    name: 'refund',
    title: 'Refund',
    fields: [
      { name: 'order', kind: 'text', required: true },
      { name: 'amount', kind: 'number' },
      { name: 'reason', kind: 'select', options: ['damaged', 'late'] },
    ],
  };

  it('submits back to its conversation as a turn the agent answers', async () => {
    const sessionId = await sessionOf(keys.alice);
    const made = await request(
      server.url,
      'POST',
      '/api/v1/panels',
      { title: 'Refunds', scope: 'session', session_id: sessionId, document: form },
      auth(keys.alice),
    );
    const submit = `/api/v1/panels/${made.body.id}/submit`;
    const bad: [Record<string, unknown>, string][] = [
      [{ form: 'nope', values: {} }, 'form'],
      [{ form: 'refund', values: { amount: 3 } }, 'values.order'],
      [{ form: 'refund', values: { order: 'A17', amount: 'three' } }, 'values.amount'],
      [{ form: 'refund', values: { order: 'A17', reason: 'bored' } }, 'values.reason'],
      [{ form: 'refund', values: { order: 'A17', extra: 1 } }, 'values.extra'],
    ];
    for (const [body, field] of bad) {
      const refused = await request(
        server.url,
        'POST',
        submit,
        { turn_id: 'refund-bad', ...body },
        auth(keys.alice),
      );
      expect(refused.status, field).toBe(400);
      expect(refused.body).toMatchObject({ error: 'invalid_form', field });
    }
    const values = { order: 'A17', amount: 12.5, reason: 'damaged' };
    const sent = await request(
      server.url,
      'POST',
      submit,
      { turn_id: 'refund-1', form: 'refund', values },
      auth(keys.alice),
    );
    expect(sent.status).toBe(202);
    expect(sent.body.session_id).toBe(sessionId);
    // The same submission again is the same turn (the idempotency key), not a second one.
    const again = await request(
      server.url,
      'POST',
      submit,
      { turn_id: 'refund-1', form: 'refund', values },
      auth(keys.alice),
    );
    expect(again.body.turn_id).toBe(sent.body.turn_id);
    const events = await until(
      () => readEvents(server.db, sessionId, 0, 1000),
      (all) => all.some((event) => event.type === 'done'),
      'the form turn to be answered',
    );
    const done = events.find((event) => event.type === 'done');
    expect(done?.type === 'done' && done.final_message.content).toContain('"order": "A17"');
    const inputs = events.filter((event) => event.type === 'message');
    expect(inputs).toHaveLength(1);
    expect(JSON.stringify(inputs[0])).toContain('Refund');
  });
});
