import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../src/config/types.js';
import { findMemberWorkspace } from '../src/store/workspaces.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Workspaces (docs/web.md, "Workspaces"), on the engine the suite runs on: an admin's to
// create and change, a member's to read and use (sessions, executions, the active one of
// the preferences); anyone else — another tenant too — gets what a missing one gets.

let server: TestServer;
const keys = {
  root: 'acme-root-key',
  sam: 'acme-sam-key',
  una: 'acme-una-key',
  eve: 'acme-eve-key',
  gus: 'globex-gus-key',
};
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const root = auth(keys.root);
const sam = auth(keys.sam);
const una = auth(keys.una);
const eve = auth(keys.eve);
const gus = auth(keys.gus);
const path = '/api/v1/workspaces';
const missingId = 'ws_01MISSINGWORKSPACE00000000';

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ROOT', tenant: 'acme', user: 'root', roles: ['admin'] },
          { key_env: 'K_SAM', tenant: 'acme', user: 'sam', roles: ['sales'] },
          { key_env: 'K_UNA', tenant: 'acme', user: 'una', roles: [] },
          { key_env: 'K_EVE', tenant: 'acme', user: 'eve', roles: ['support'] },
          { key_env: 'K_GUS', tenant: 'globex', user: 'gus', roles: ['admin'] },
        ],
      },
      agents: { default: { visibility: 'tenant' } },
      missions: { report: { prompt: 'Write the report.' } },
    },
    { K_ROOT: keys.root, K_SAM: keys.sam, K_UNA: keys.una, K_EVE: keys.eve, K_GUS: keys.gus },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

const call = (headers: Record<string, string>, method: string, url: string, body?: unknown) =>
  request(server.url, method, url, body, headers);

async function create(body: Record<string, unknown>, as = root): Promise<any> {
  const created = await call(as, 'POST', path, body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

const rows = async (table: string) =>
  (await server.db.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]?.n ?? 0;
const namesOf = (page: any) => page.items.map((item: any) => item.name);

describe('workspaces', () => {
  it('an admin creates, reads, changes and deletes them', async () => {
    const made = await create({
      name: '  Launch  ',
      description: 'the spring launch',
      members: { roles: ['sales', 'sales'], users: ['una'] },
    });
    expect(made).toEqual({
      workspace_id: expect.stringMatching(/^ws_[0-9A-Z]{26}$/),
      name: 'Launch',
      description: 'the spring launch',
      members: { roles: ['sales'], users: ['una'] },
      created_by: 'root',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const id = made.workspace_id;
    const read = await call(root, 'GET', `${path}/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(made);

    const renamed = await call(root, 'PATCH', `${path}/${id}`, {
      name: 'Autumn launch',
      members: { users: [] },
    });
    expect(renamed.status).toBe(200);
    // A list left out stays; a description left out stays.
    expect(renamed.body).toMatchObject({
      name: 'Autumn launch',
      description: 'the spring launch',
      members: { roles: ['sales'], users: [] },
    });
    const cleared = await call(root, 'PATCH', `${path}/${id}`, { description: null });
    expect(cleared.body.description).toBeNull();

    const deleted = await call(root, 'DELETE', `${path}/${id}`);
    expect(deleted.status).toBe(204);
    const gone = await call(root, 'GET', `${path}/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe('workspace_not_found');
    const again = await call(root, 'DELETE', `${path}/${id}`);
    expect(again.status).toBe(404);
  });

  it("are members' by role, by user, or the whole tenant's; others get what a missing one gets", async () => {
    const sales = await create({ name: 'Sales desk', members: { roles: ['sales'] } });
    const unas = await create({ name: 'una only', members: { users: ['una'] } });
    const everyone = await create({ name: 'all hands' });

    const listOf = async (as: Record<string, string>) =>
      namesOf((await call(as, 'GET', path)).body);
    // By name, whatever its case.
    expect(await listOf(sam)).toEqual(['all hands', 'Sales desk']);
    expect(await listOf(una)).toEqual(['all hands', 'una only']);
    expect(await listOf(eve)).toEqual(['all hands']);
    // An admin is a member of every workspace of its tenant.
    expect(await listOf(root)).toEqual(
      expect.arrayContaining(['all hands', 'Sales desk', 'una only']),
    );
    expect(await listOf(gus)).toEqual([]);

    expect((await call(sam, 'GET', `${path}/${sales.workspace_id}`)).status).toBe(200);
    expect((await call(una, 'GET', `${path}/${unas.workspace_id}`)).status).toBe(200);
    expect((await call(eve, 'GET', `${path}/${everyone.workspace_id}`)).status).toBe(200);

    // A non-member of the tenant, and another tenant's admin: exactly a missing one.
    for (const [as, id] of [
      [eve, sales.workspace_id],
      [sam, unas.workspace_id],
      [gus, sales.workspace_id],
      [gus, everyone.workspace_id],
    ] as const) {
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const body = method === 'PATCH' ? { name: 'taken over' } : undefined;
        const foreign = await call(as, method, `${path}/${id}`, body);
        const missing = await call(as, method, `${path}/${missingId}`, body);
        expect(foreign.status, `${method} ${id}`).toBe(404);
        expect(foreign.body).toEqual(missing.body);
      }
    }
    expect((await call(root, 'GET', `${path}/${sales.workspace_id}`)).body.name).toBe('Sales desk');

    // The function every other `workspace_id` is checked with agrees.
    const principal = (tenant: string, user: string, roles: string[]): Principal => ({
      tenant,
      user,
      roles,
      operator: false,
    });
    const found = (who: Principal, id: string) => findMemberWorkspace(server.db, who, id);
    expect((await found(principal('acme', 'x', ['sales']), sales.workspace_id))?.name).toBe(
      'Sales desk',
    );
    expect(await found(principal('acme', 'x', ['support']), sales.workspace_id)).toBeNull();
    expect((await found(principal('acme', 'una', []), unas.workspace_id))?.name).toBe('una only');
    expect((await found(principal('acme', 'x', ['*']), unas.workspace_id))?.name).toBe('una only');
    expect((await found(principal('acme', 'x', []), everyone.workspace_id))?.name).toBe(
      'all hands',
    );
    expect(await found(principal('globex', 'una', ['admin']), unas.workspace_id)).toBeNull();
    expect(await found(principal('acme', 'una', []), missingId)).toBeNull();
  });

  it('are written by admins only, and a refused write changes nothing', async () => {
    const desk = await create({ name: 'Pipeline', members: { roles: ['sales'] } });
    const before = await server.db.query('select * from workspaces order by workspace_id');
    const refused = [
      await call(sam, 'POST', path, { name: 'Mine' }),
      await call(sam, 'PATCH', `${path}/${desk.workspace_id}`, { name: 'Ours' }),
      await call(sam, 'DELETE', `${path}/${desk.workspace_id}`),
    ];
    for (const answer of refused) {
      expect(answer.status).toBe(403);
      expect(answer.body.error).toBe('forbidden');
    }
    expect((await server.db.query('select * from workspaces order by workspace_id')).rows).toEqual(
      before.rows,
    );
  });

  it('have one name per tenant whatever its case (409), and refuse bad input naming the field', async () => {
    const first = await create({ name: 'Research' });
    const other = await create({ name: 'Ops' });
    const count = await rows('workspaces');
    const duplicate = await call(root, 'POST', path, { name: 'RESEARCH' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toMatchObject({ error: 'workspace_name_taken', field: 'name' });
    const renamed = await call(root, 'PATCH', `${path}/${other.workspace_id}`, {
      name: 'research',
    });
    expect(renamed.status).toBe(409);
    expect(renamed.body.error).toBe('workspace_name_taken');
    // Renaming a workspace to its own name in another case is no conflict.
    const recased = await call(root, 'PATCH', `${path}/${first.workspace_id}`, {
      name: 'RESEARCH',
    });
    expect(recased.status).toBe(200);
    // Another tenant has its own names.
    await create({ name: 'Research' }, gus);

    const cases: [string, string, unknown, string][] = [
      ['POST', path, { name: '' }, 'name'],
      ['POST', path, { name: '   ' }, 'name'],
      ['POST', path, { name: 'x'.repeat(101) }, 'name'],
      ['POST', path, { name: 'a\u0000b' }, 'name'],
      ['POST', path, {}, 'name'],
      ['POST', path, { name: 'Fine', members: { roles: 'sales' } }, 'members.roles'],
      ['POST', path, { name: 'Fine', members: { groups: ['x'] } }, 'members'],
      ['POST', path, { name: 'Fine', owner: 'root' }, ''],
      ['PATCH', `${path}/${other.workspace_id}`, {}, 'name, description or members'],
      ['PATCH', `${path}/${other.workspace_id}`, { description: 'd'.repeat(2001) }, 'description'],
    ];
    for (const [method, url, body, field] of cases) {
      const answer = await call(root, method, url, body);
      expect(answer.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(answer.body.error).toBe('invalid_request');
      expect(answer.body.message).toContain(field);
    }
    expect(await rows('workspaces')).toBe(count + 1);
  });
});

describe('sessions and executions in a workspace', () => {
  let sales: any;
  let support: any;

  beforeAll(async () => {
    sales = await create({ name: 'Sales floor', members: { roles: ['sales'] } });
    support = await create({ name: 'Support floor', members: { users: ['sam', 'eve'] } });
  });

  it('a session is created in one, moved, taken out, and listed by it', async () => {
    const inSales = await call(sam, 'POST', '/api/v1/chat/sessions', {
      title: 'lead',
      workspace_id: sales.workspace_id,
    });
    expect(inSales.status).toBe(201);
    expect(inSales.body.workspace_id).toBe(sales.workspace_id);
    const loose = await call(sam, 'POST', '/api/v1/chat/sessions', { title: 'loose' });
    expect(loose.body.workspace_id).toBeNull();
    const detail = await call(sam, 'GET', `/api/v1/chat/sessions/${inSales.body.session_id}`);
    expect(detail.body.workspace_id).toBe(sales.workspace_id);

    const listed = async (as: Record<string, string>, id: string) => {
      const page = await call(as, 'GET', `/api/v1/chat/sessions?workspace_id=${id}`);
      expect(page.status).toBe(200);
      return page.body.items.map((item: any) => item.session_id);
    };
    expect(await listed(sam, sales.workspace_id)).toEqual([inSales.body.session_id]);
    // Root sees it too (an admin is a member); a non-member may not filter by it.
    expect(await listed(root, sales.workspace_id)).toEqual([inSales.body.session_id]);
    const refused = await call(
      eve,
      'GET',
      `/api/v1/chat/sessions?workspace_id=${sales.workspace_id}`,
    );
    const missing = await call(eve, 'GET', `/api/v1/chat/sessions?workspace_id=${missingId}`);
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ error: 'workspace_not_found', field: 'workspace_id' });
    expect(refused.body).toEqual(missing.body);

    // Moved into another of the owner's workspaces, then out of any.
    const moved = await call(sam, 'PATCH', `/api/v1/chat/sessions/${loose.body.session_id}`, {
      workspace_id: support.workspace_id,
    });
    expect(moved.status).toBe(200);
    expect(moved.body.workspace_id).toBe(support.workspace_id);
    expect(await listed(eve, support.workspace_id)).toEqual([loose.body.session_id]);
    const out = await call(sam, 'PATCH', `/api/v1/chat/sessions/${loose.body.session_id}`, {
      workspace_id: null,
    });
    expect(out.body.workspace_id).toBeNull();
    expect(await listed(eve, support.workspace_id)).toEqual([]);
  });

  it('refuses a workspace the caller is not a member of, as a missing one, writing nothing', async () => {
    const sessions = await rows('sessions');
    const executions = await rows('executions');
    const own = await call(eve, 'POST', '/api/v1/chat/sessions', { title: 'eve' });
    const aims: [Record<string, string>, string, string, (id: string) => unknown][] = [
      [eve, 'POST', '/api/v1/chat/sessions', (id) => ({ workspace_id: id })],
      [gus, 'POST', '/api/v1/chat/sessions', (id) => ({ workspace_id: id })],
      [
        eve,
        'PATCH',
        `/api/v1/chat/sessions/${own.body.session_id}`,
        (id) => ({ workspace_id: id }),
      ],
      [
        eve,
        'POST',
        '/api/v1/missions/report/executions',
        (id) => ({ execution_id: `eve_${id.length}`, workspace_id: id }),
      ],
      [gus, 'PUT', '/api/v1/me/preferences', (id) => ({ workspace_id: id })],
      [eve, 'PUT', '/api/v1/me/preferences', (id) => ({ workspace_id: id })],
    ];
    for (const [as, method, url, body] of aims) {
      const foreign = await call(as, method, url, body(sales.workspace_id));
      const missing = await call(as, method, url, body(missingId));
      expect(foreign.status, `${method} ${url}`).toBe(404);
      expect(foreign.body).toEqual({
        error: 'workspace_not_found',
        message: 'workspace_id: no such workspace',
        field: 'workspace_id',
      });
      expect(missing.body).toEqual(foreign.body);
    }
    const executionsList = await call(
      eve,
      'GET',
      `/api/v1/executions?workspace_id=${sales.workspace_id}`,
    );
    expect(executionsList.status).toBe(404);
    expect(await rows('sessions')).toBe(sessions + 1);
    expect(await rows('executions')).toBe(executions);
    const unmoved = await call(eve, 'GET', `/api/v1/chat/sessions/${own.body.session_id}`);
    expect(unmoved.body.workspace_id).toBeNull();
    // Only its owner or an admin moves a session, even into a workspace of theirs.
    const notOwner = await call(sam, 'PATCH', `/api/v1/chat/sessions/${own.body.session_id}`, {
      workspace_id: support.workspace_id,
    });
    expect(notOwner.status).toBe(403);
  });

  it('an execution is dispatched in one, with its session, and listed by it', async () => {
    const dispatched = await call(sam, 'POST', '/api/v1/missions/report/executions', {
      execution_id: 'ws_exec_1',
      workspace_id: sales.workspace_id,
    });
    expect(dispatched.status).toBe(202);
    expect(dispatched.body.workspace_id).toBe(sales.workspace_id);
    const loose = await call(sam, 'POST', '/api/v1/missions/report/executions', {
      execution_id: 'ws_exec_2',
    });
    expect(loose.body.workspace_id).toBeNull();
    const session = await call(sam, 'GET', `/api/v1/chat/sessions/${dispatched.body.session_id}`);
    expect(session.body.workspace_id).toBe(sales.workspace_id);

    // A retry is the same dispatch; the same id in another workspace is another one.
    const retried = await call(sam, 'POST', '/api/v1/missions/report/executions', {
      execution_id: 'ws_exec_1',
      workspace_id: sales.workspace_id,
    });
    expect(retried.status).toBe(202);
    expect(retried.body.session_id).toBe(dispatched.body.session_id);
    const elsewhere = await call(sam, 'POST', '/api/v1/missions/report/executions', {
      execution_id: 'ws_exec_1',
      workspace_id: support.workspace_id,
    });
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body.error).toBe('execution_conflict');

    const listed = await call(sam, 'GET', `/api/v1/executions?workspace_id=${sales.workspace_id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((item: any) => item.execution_id)).toEqual(['ws_exec_1']);
    const detail = await call(sam, 'GET', '/api/v1/executions/ws_exec_1');
    expect(detail.body.workspace_id).toBe(sales.workspace_id);
    for (const id of ['ws_exec_1', 'ws_exec_2']) {
      await until(
        async () => (await call(sam, 'GET', `/api/v1/executions/${id}`)).body,
        (execution) => execution.status === 'success',
        `execution ${id}`,
      );
    }
  });

  it('deleting a workspace takes its sessions and executions out of it, and they stay', async () => {
    const doomed = await create({ name: 'Short-lived', members: { roles: ['sales'] } });
    const session = await call(sam, 'POST', '/api/v1/chat/sessions', {
      workspace_id: doomed.workspace_id,
    });
    const dispatched = await call(sam, 'POST', '/api/v1/missions/report/executions', {
      execution_id: 'ws_exec_doomed',
      workspace_id: doomed.workspace_id,
    });
    expect(dispatched.status).toBe(202);
    await until(
      async () => (await call(sam, 'GET', '/api/v1/executions/ws_exec_doomed')).body,
      (execution) => execution.status === 'success',
      'the execution',
    );
    const saved = await call(sam, 'PUT', '/api/v1/me/preferences', {
      workspace_id: doomed.workspace_id,
    });
    expect(saved.status).toBe(200);
    expect(saved.body.workspace_id).toBe(doomed.workspace_id);

    expect((await call(root, 'DELETE', `${path}/${doomed.workspace_id}`)).status).toBe(204);
    const kept = await call(sam, 'GET', `/api/v1/chat/sessions/${session.body.session_id}`);
    expect(kept.status).toBe(200);
    expect(kept.body.workspace_id).toBeNull();
    const execution = await call(sam, 'GET', '/api/v1/executions/ws_exec_doomed');
    expect(execution.body.workspace_id).toBeNull();
    const itsSession = await call(sam, 'GET', `/api/v1/chat/sessions/${execution.body.session_id}`);
    expect(itsSession.body.workspace_id).toBeNull();
    const stored = await server.db.query(
      'select 1 from sessions where workspace_id = $1 union all select 1 from executions where workspace_id = $1',
      [doomed.workspace_id],
    );
    expect(stored.rowCount).toBe(0);
    // The active workspace that went is no longer the active one.
    const preferences = await call(sam, 'GET', '/api/v1/me/preferences');
    expect(preferences.body.workspace_id).toBeNull();
    const listing = await call(
      sam,
      'GET',
      `/api/v1/chat/sessions?workspace_id=${doomed.workspace_id}`,
    );
    expect(listing.status).toBe(404);
  });
});

describe('the active workspace (preferences)', () => {
  it('is one the caller is a member of, or null', async () => {
    const mine = await create({ name: 'Una desk', members: { users: ['una'] } });
    const saved = await call(una, 'PUT', '/api/v1/me/preferences', {
      workspace_id: mine.workspace_id,
      language: 'en',
    });
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({ workspace_id: mine.workspace_id, language: 'en' });
    expect((await call(una, 'GET', '/api/v1/me/preferences')).body.workspace_id).toBe(
      mine.workspace_id,
    );
    // No longer a member: no longer the active one.
    await call(root, 'PATCH', `${path}/${mine.workspace_id}`, { members: { users: ['sam'] } });
    expect((await call(una, 'GET', '/api/v1/me/preferences')).body.workspace_id).toBeNull();
    const refused = await call(una, 'PUT', '/api/v1/me/preferences', {
      workspace_id: mine.workspace_id,
    });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ error: 'workspace_not_found', field: 'workspace_id' });
    const cleared = await call(una, 'PUT', '/api/v1/me/preferences', { workspace_id: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.workspace_id).toBeNull();
    for (const bad of [7, '', 'x'.repeat(129)]) {
      const answer = await call(una, 'PUT', '/api/v1/me/preferences', { workspace_id: bad });
      expect(answer.status).toBe(400);
      expect(answer.body.message).toContain('workspace_id');
    }
  });
});
