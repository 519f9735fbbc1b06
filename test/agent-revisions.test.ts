import { afterEach, describe, expect, it } from 'vitest';
import { startProcess, type Running } from '../src/cli/start.js';
import { createLogger } from '../src/log.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { request } from './support/server.js';

// A definition's kept revisions, as its admin reads them (docs/governance.md, "Revisions"):
// GET /api/v1/agents/{name}/revisions (newest first, paged), …/revisions/{revision} (one
// whole), …/shipped (what a DELETE restores); the same for missions. Tenant-scoped: another
// tenant's revisions and agents answer as missing ones.
const log = createLogger({ level: 'silent' });
const keys = { K_ALICE: 'alice-key', K_CAROL: 'carol-key', K_GINA: 'gina-key' };
const alice = { authorization: 'Bearer alice-key' };
const carol = { authorization: 'Bearer carol-key' };
const gina = { authorization: 'Bearer gina-key' };
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const clean of cleanup.splice(0).reverse()) await clean();
});

type Storage = { url: string | null; dataDir: string };

/** The API alone: no background loop writes, so what changes is what the test does. */
async function start(storage: Storage, shipped: string): Promise<Running> {
  const config = testConfig(
    storage,
    {
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
  return startProcess(config, { api: true, worker: false }, log, {
    env: { ...process.env, ...keys },
    checkResponses: true,
  });
}

async function fresh(shipped = 'shipped v1') {
  const storage = await freshStorage();
  cleanup.push(() => storage.drop());
  let running = await start(storage.storage, shipped);
  const stop = async () => running.stop();
  cleanup.push(() => stop());
  return {
    url: () => running.url as string,
    db: () => running.db,
    /** Starts again on the same database with another shipped `helper`. */
    reship: async (next: string) => {
      await running.stop();
      running = await start(storage.storage, next);
    },
  };
}

const get = (url: string, path: string, who: Record<string, string> = alice) =>
  request(url, 'GET', path, undefined, who);

/** Every revision the listing gives, page after page of `limit`. */
async function allRevisions(url: string, path: string, limit: number, who = alice) {
  const items: any[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 50; pages++) {
    const query: string = `?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`;
    const answer = await get(url, `${path}/revisions${query}`, who);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.items.length).toBeLessThanOrEqual(limit);
    items.push(...answer.body.items);
    cursor = answer.body.next_cursor;
    if (cursor === null) return items;
  }
  throw new Error('the listing never ended');
}

const listedRevision = async (url: string, name: string) =>
  (await get(url, '/api/v1/agents')).body.items.find((item: any) => item.name === name).revision;

const historyRows = async (db: Running['db']) =>
  (await db.query<{ n: number }>('select count(*)::int as n from definition_history')).rows[0]?.n;

describe('agent revisions', () => {
  it('lists every revision newest first, in pages, each readable whole', async () => {
    const server = await fresh();
    const url = server.url();
    const first = await get(url, '/api/v1/agents/helper/revisions');
    expect(first.status).toBe(200);
    expect(first.body.next_cursor).toBeNull();
    expect(first.body.items).toHaveLength(1);
    const [shippedEntry] = first.body.items;
    expect(shippedEntry).toMatchObject({
      source: 'shipped',
      created_by: null,
      current: true,
      revision: await listedRevision(url, 'helper'),
    });
    const shipped = await get(url, '/api/v1/agents/helper/shipped');
    expect(shipped.status).toBe(200);
    expect(shipped.body).toMatchObject({
      name: 'helper',
      namespace: 'default',
      source: 'shipped',
      current: true,
      revision: shippedEntry.revision,
      content_hash: shippedEntry.content_hash,
      definition: { completion_text: 'shipped v1', model: 'demo/echo' },
    });

    // Three edits, each a revision of acme's own.
    const written: any[] = [];
    for (const text of ['edit 1', 'edit 2', 'edit 3']) {
      const put = await request(
        url,
        'PUT',
        '/api/v1/agents/helper',
        { completion_text: text, instructions: `Say ${text}.` },
        alice,
      );
      expect(put.status).toBe(200);
      written.push(put.body);
    }
    const listed = await allRevisions(url, '/api/v1/agents/helper', 50);
    expect(listed.map((item) => item.source)).toEqual(['edited', 'edited', 'edited', 'shipped']);
    const numbers = listed.map((item) => item.revision as number);
    expect([...numbers].sort((x, y) => y - x)).toEqual(numbers);
    expect(new Set(numbers).size).toBe(4);
    expect(listed.map((item) => item.current)).toEqual([true, false, false, false]);
    expect(listed[0].revision).toBe(await listedRevision(url, 'helper'));
    expect(listed.slice(0, 3).map((item) => item.created_by)).toEqual(['alice', 'alice', 'alice']);
    expect(listed.slice(0, 3).map((item) => item.content_hash)).toEqual(
      written.map((view) => view.content_hash).reverse(),
    );
    for (const item of listed) expect(Date.parse(item.created_at)).not.toBeNaN();

    // Pages of one and of three give the same revisions, in the same order.
    expect(await allRevisions(url, '/api/v1/agents/helper', 1)).toEqual(listed);
    const threes = await get(url, '/api/v1/agents/helper/revisions?limit=3');
    expect(threes.body.items).toEqual(listed.slice(0, 3));
    expect(threes.body.next_cursor).toBe(String(listed[2].revision));
    const rest = await get(
      url,
      `/api/v1/agents/helper/revisions?cursor=${threes.body.next_cursor}`,
    );
    expect(rest.body).toEqual({ items: listed.slice(3), next_cursor: null });

    // A past revision is exactly what its PUT answered.
    for (const [index, view] of written.entries()) {
      const entry = listed[2 - index];
      const revision = await get(url, `/api/v1/agents/helper/revisions/${entry.revision}`);
      expect(revision.status).toBe(200);
      expect(revision.body).toEqual({
        name: 'helper',
        namespace: view.namespace,
        ...entry,
        definition: view.definition,
      });
    }
    const oldest = await get(url, `/api/v1/agents/helper/revisions/${shippedEntry.revision}`);
    expect(oldest.body.definition).toEqual(shipped.body.definition);
    expect(oldest.body.current).toBe(false);
    const nowShipped = await get(url, '/api/v1/agents/helper/shipped');
    expect(nowShipped.body).toEqual({ ...shipped.body, current: false });

    // Reading needs the admin role, as the definition does.
    for (const path of ['revisions', `revisions/${shippedEntry.revision}`, 'shipped']) {
      const refused = await get(url, `/api/v1/agents/helper/${path}`, carol);
      expect(refused.status, path).toBe(403);
      expect(refused.body.error).toBe('forbidden');
    }
  });

  it('a restore (DELETE) adds a revision: the shipped definition, by whoever restored it', async () => {
    const server = await fresh();
    const url = server.url();
    const shipped = (await get(url, '/api/v1/agents/helper/shipped')).body;
    const put = await request(url, 'PUT', '/api/v1/agents/helper', { greeting: 'Hi!' }, alice);
    expect(put.status).toBe(200);
    const restored = await request(url, 'DELETE', '/api/v1/agents/helper', undefined, alice);
    expect(restored.status).toBe(200);
    expect(restored.body.restored).toBe(true);

    const listed = await allRevisions(url, '/api/v1/agents/helper', 50);
    expect(listed.map((item) => item.source)).toEqual(['restored', 'edited', 'shipped']);
    expect(listed[0]).toMatchObject({
      created_by: 'alice',
      content_hash: shipped.content_hash,
      current: false,
    });
    // The tenant runs the shipped revision again: the listing's and the turn's number.
    expect(listed[2]).toMatchObject({ revision: shipped.revision, current: true });
    expect(await listedRevision(url, 'helper')).toBe(shipped.revision);
    const back = await get(url, `/api/v1/agents/helper/revisions/${listed[0].revision}`);
    expect(back.body).toMatchObject({ source: 'restored', definition: shipped.definition });
    const again = await get(url, '/api/v1/agents/helper/shipped');
    expect(again.body).toEqual({ ...shipped, current: true });

    // Nothing left to restore: no revision either.
    const rows = await historyRows(server.db());
    const twice = await request(url, 'DELETE', '/api/v1/agents/helper', undefined, alice);
    expect(twice.status).toBe(409);
    expect(await historyRows(server.db())).toBe(rows);
  });

  it('a changed configuration adds a shipped revision beside the tenant’s own', async () => {
    const server = await fresh('shipped v1');
    const put = await request(
      server.url(),
      'PUT',
      '/api/v1/agents/helper',
      { completion_text: 'ours' },
      alice,
    );
    expect(put.status).toBe(200);
    await server.reship('shipped v2');
    const url = server.url();
    const listed = await allRevisions(url, '/api/v1/agents/helper', 50);
    expect(listed.map((item) => item.source)).toEqual(['shipped', 'edited', 'shipped']);
    expect(listed.map((item) => item.current)).toEqual([false, true, false]);
    const shipped = await get(url, '/api/v1/agents/helper/shipped');
    expect(shipped.body).toMatchObject({
      revision: listed[0].revision,
      current: false,
      definition: { completion_text: 'shipped v2' },
    });
    const old = await get(url, `/api/v1/agents/helper/revisions/${listed[2].revision}`);
    expect(old.body.definition.completion_text).toBe('shipped v1');
    // The view says the shipped one moved on; the diff is between these two definitions.
    const view = await get(url, '/api/v1/agents/helper');
    expect(view.body).toMatchObject({ shipped_changed: true, definition: put.body.definition });
    // Another tenant never customized it: it has only the shipped revisions, the newest current.
    const theirs = await allRevisions(url, '/api/v1/agents/helper', 50, gina);
    expect(theirs.map((item) => [item.source, item.current])).toEqual([
      ['shipped', true],
      ['shipped', false],
    ]);
  });

  it("a tenant's own agent has no shipped one, and leaves with its DELETE", async () => {
    const server = await fresh();
    const url = server.url();
    const made = await request(url, 'PUT', '/api/v1/agents/mine', { greeting: 'Mine.' }, alice);
    expect(made.status).toBe(200);
    const shipped = await get(url, '/api/v1/agents/mine/shipped');
    expect(shipped.status).toBe(404);
    expect(shipped.body.error).toBe('not_shipped');
    const listed = await allRevisions(url, '/api/v1/agents/mine', 50);
    expect(listed).toEqual([
      expect.objectContaining({ source: 'edited', current: true, created_by: 'alice' }),
    ]);
    const gone = await request(url, 'DELETE', '/api/v1/agents/mine', undefined, alice);
    expect(gone.body).toEqual({ name: 'mine', deleted: true });
    for (const path of ['revisions', `revisions/${listed[0].revision}`, 'shipped']) {
      const answer = await get(url, `/api/v1/agents/mine/${path}`);
      expect(answer.status, path).toBe(404);
      expect(answer.body.error).toBe('unknown_agent');
    }
  });

  it("answers another tenant's agent and revision exactly as missing ones", async () => {
    const server = await fresh();
    const url = server.url();
    expect(
      (await request(url, 'PUT', '/api/v1/agents/acmebot', { greeting: 'secret' }, alice)).status,
    ).toBe(200);
    expect(
      (await request(url, 'PUT', '/api/v1/agents/helper', { greeting: 'secret' }, alice)).status,
    ).toBe(200);
    const acme = await allRevisions(url, '/api/v1/agents/helper', 50);
    const acmeOwn = acme[0].revision as number;
    const acmebot = (await allRevisions(url, '/api/v1/agents/acmebot', 50))[0].revision as number;
    const rows = await historyRows(server.db());

    // Globex sees the shipped helper only: none of acme's revisions, listed or read.
    const theirs = await allRevisions(url, '/api/v1/agents/helper', 50, gina);
    expect(theirs.map((item) => item.source)).toEqual(['shipped']);
    const unused = 999_999_999;
    const same = async (foreign: string, missing: string, replace: [string, string][]) => {
      const a = await get(url, foreign, gina);
      const b = await get(url, missing, gina);
      let text = JSON.stringify(b.body);
      for (const [from, to] of replace) text = text.split(from).join(to);
      expect(a.status, foreign).toBe(404);
      expect(b.status, missing).toBe(404);
      expect(JSON.stringify(a.body), foreign).toBe(text);
      expect(JSON.stringify(a.body)).not.toContain('secret');
    };
    await same(
      `/api/v1/agents/helper/revisions/${acmeOwn}`,
      `/api/v1/agents/helper/revisions/${unused}`,
      [[String(unused), String(acmeOwn)]],
    );
    await same(
      `/api/v1/agents/default/revisions/${acmebot}`,
      `/api/v1/agents/default/revisions/${unused}`,
      [[String(unused), String(acmebot)]],
    );
    for (const path of ['revisions', `revisions/${acmebot}`, 'shipped']) {
      await same(`/api/v1/agents/acmebot/${path}`, `/api/v1/agents/nobody/${path}`, [
        ['nobody', 'acmebot'],
      ]);
    }
    expect(await historyRows(server.db())).toBe(rows);
  });

  it('refuses a bad revision number or cursor with 400, an unknown one with 404', async () => {
    const server = await fresh();
    const url = server.url();
    for (const bad of ['0', '-1', 'abc', '1.5', '1e3', '01', '99999999999999999999', '%00']) {
      const answer = await get(url, `/api/v1/agents/helper/revisions/${bad}`);
      expect(answer.status, bad).toBe(400);
      expect(answer.body.error, bad).toBe('invalid_request');
    }
    const unknown = await get(url, '/api/v1/agents/helper/revisions/999999999');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('revision_not_found');
    for (const query of [
      'cursor=abc',
      'cursor=0',
      'cursor=-5',
      'limit=0',
      'limit=201',
      'limit=x',
    ]) {
      const answer = await get(url, `/api/v1/agents/helper/revisions?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body.error, query).toBe('invalid_request');
    }
    // A cursor below every revision: an empty last page.
    const past = await get(url, '/api/v1/agents/helper/revisions?cursor=1');
    expect(past.body).toEqual({ items: [], next_cursor: null });
  });
});

describe('mission revisions', () => {
  it('lists, reads and shows the shipped mission the same way', async () => {
    const server = await fresh();
    const url = server.url();
    const put = await request(url, 'PUT', '/api/v1/missions/report', { prompt: 'Ours.' }, alice);
    expect(put.status).toBe(200);
    const listed = await allRevisions(url, '/api/v1/missions/report', 50);
    expect(listed.map((item) => [item.source, item.current])).toEqual([
      ['edited', true],
      ['shipped', false],
    ]);
    const edited = await get(url, `/api/v1/missions/report/revisions/${listed[0].revision}`);
    expect(edited.body.definition).toEqual(put.body.definition);
    const shipped = await get(url, '/api/v1/missions/report/shipped');
    expect(shipped.body).toMatchObject({
      revision: listed[1].revision,
      definition: { prompt: 'Report.' },
    });
    const missing = await get(url, '/api/v1/missions/nothing/revisions');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('mission_not_found');
    const badName = await get(url, '/api/v1/missions/bad%20name/shipped');
    expect(badName.status).toBe(400);
  });
});
