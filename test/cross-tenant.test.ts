import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openapiDocument } from '../src/api/openapi.js';
import { routeShape } from '../src/api/routes.js';
import { workspaceDir } from '../src/tools/shell/workspace.js';
import { freePort } from './support/browser.js';
import { changedTables, fingerprint, tenantFingerprint } from './support/fingerprint.js';
import { until } from './support/poll.js';
import { startTestServer, type TestServer } from './support/server.js';

/**
 * The tenant boundary, route by route (docs/security.md's matrix). Tenant A (acme) gets
 * one of every resource through the API; then tenant B's user and admin aim at A's ids on
 * every route of the OpenAPI document that takes one, and must get exactly what a missing
 * resource gets (same status, same body once the ids are named alike). No refusal writes
 * anything, and nothing B does changes a row of A. Lists never show A's items. B's agent's
 * tools (memory, shell workspace, skills, http_fetch) never reach A's data.
 */

const keys = {
  K_A_USER: 'acme-user-key-5b1e',
  K_A_ADMIN: 'acme-admin-key-93c0',
  K_B_USER: 'globex-user-key-2d7a',
  K_B_ADMIN: 'globex-admin-key-e4f8',
};
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const aUser = as(keys.K_A_USER);
const aAdmin = as(keys.K_A_ADMIN);
const bPrincipals = { user: as(keys.K_B_USER), admin: as(keys.K_B_ADMIN) };
/** Words only A's data contains: none may appear in anything B receives. */
const secret = 'acme-secret-plan-marmalade';
const shellSecret = 'acme-shell-secret-quince';

const png = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
  Buffer.alloc(40, 7),
]);

/** The ids a route takes: A's real ones, B's own, or made-up ones. */
interface Ids {
  session: string;
  turn: string;
  request: string;
  attachment: string;
  memory: string;
  execution: string;
  agent: string;
  mission: string;
  budget: string;
  panel: string;
  photo: string;
  workspace: string;
  schedule: string;
  message: string;
}

interface Answer {
  status: number;
  text: string;
}

let server: TestServer;
let port = 0;
let skillsDir = '';
let checkpoint = 0;
const a = {} as Ids;
const b = {} as Ids;
let aPersonal = '';
let aNote = '';
/** A kept revision of A's agent and of A's mission (a number: not an id to normalize). */
const aRevisions = { agent: 0, mission: 0 };

async function call(
  headers: Record<string, string>,
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer> {
  const image = Buffer.isBuffer(body);
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      ...headers,
      ...(body === undefined ? {} : { 'content-type': image ? 'image/png' : 'application/json' }),
    },
    body: body === undefined ? null : image ? body : JSON.stringify(body),
  });
  // An event stream never ends: its status is the answer.
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
    await response.body?.cancel();
    return { status: response.status, text: '(event stream)' };
  }
  return { status: response.status, text: await response.text() };
}

async function must(answer: Promise<Answer>, status: number, what: string): Promise<any> {
  const done = await answer;
  expect(done.status, `${what}: ${done.text.slice(0, 300)}`).toBe(status);
  return JSON.parse(done.text);
}

/** Events of a session as the database holds them (tool results are in their payload). */
async function toolResults(sessionId: string): Promise<any[]> {
  const found = await server.db.query<{ payload: any }>(
    `select payload from events where session_id = $1 and type = 'tool_result' order by sequence`,
    [sessionId],
  );
  return found.rows.map((row) => row.payload);
}

/** Admits a turn and waits for its reply (`done`) or its approval request. */
async function turn(
  headers: Record<string, string>,
  turnId: string,
  message: string,
  sessionId?: string,
): Promise<string> {
  const admitted = await must(
    call(headers, 'POST', '/api/v1/chat/turns', {
      turn_id: turnId,
      message,
      ...(sessionId ? { session_id: sessionId } : {}),
    }),
    202,
    `turn ${turnId}`,
  );
  await until(
    () =>
      server.db.query(
        `select 1 from turns where turn_id = $1 and session_id = $2
            and state in ('done', 'error', 'cancelled')
         union all
         select 1 from input_requests where session_id = $2 and state = 'pending'`,
        [turnId, admitted.session_id],
      ),
    (found) => found.rowCount > 0,
    `turn ${turnId}`,
  );
  return admitted.session_id;
}

beforeAll(async () => {
  port = await freePort();
  skillsDir = mkdtempSync(join(tmpdir(), 'parley-tenants-skills-'));
  mkdirSync(join(skillsDir, 'refunds'));
  writeFileSync(
    join(skillsDir, 'refunds', 'SKILL.md'),
    '---\nname: refunds\ndescription: Refund rules\n---\nRefund within 30 days.',
  );
  server = await startTestServer(
    {
      server: { port },
      runtime: { execution_recheck_ms: 300 },
      auth: {
        keys: [
          { key_env: 'K_A_USER', tenant: 'acme', user: 'acme-ann', roles: [] },
          { key_env: 'K_A_ADMIN', tenant: 'acme', user: 'acme-root', roles: ['admin'] },
          { key_env: 'K_B_USER', tenant: 'globex', user: 'globex-bob', roles: [] },
          { key_env: 'K_B_ADMIN', tenant: 'globex', user: 'globex-root', roles: ['admin'] },
        ],
      },
      skills_dir: skillsDir,
      agents: {
        default: {
          tools: {
            calculator: 'approve',
            remember: 'allow',
            recall: 'allow',
            forget: 'allow',
            shell: { policy: 'allow' },
            http_fetch: {
              policy: 'allow',
              allow_hosts: [`127.0.0.1:${port}`],
              allow_private: true,
            },
          },
          skills: ['refunds'],
        },
      },
      missions: { blocking: { prompt: 'Deploy.', loop_prompt: '/decide blocked' } },
      schedules: { acme_nightly: { mission: 'blocking', cron: '0 3 * * *', tenant: 'acme' } },
      webhooks: {
        // Nobody listens there: A's deliveries die at once, as dead letters.
        audit: {
          url: `http://127.0.0.1:${await freePort()}/gone`,
          events: ['done'],
          secret_env: 'HOOK_SECRET',
          tenants: ['acme'],
          max_attempts: 1,
        },
      },
    },
    { ...keys, HOOK_SECRET: `whsec_${Buffer.alloc(32, 5).toString('base64')}` },
  );

  // Tenant A: a conversation with a memory, an options offer, a shell file, an attachment.
  a.session = await turn(aUser, 'acme_t1', `/tool remember {"text": "${secret}"}`);
  await turn(
    aUser,
    'acme_t2',
    `/tool shell {"command": "echo ${shellSecret} > note.txt"}`,
    a.session,
  );
  a.turn = 'acme_t2';
  aNote = join(workspaceDir(server.config.tools.workspaceDir, 'acme', a.session), 'note.txt');
  const memories = await must(call(aUser, 'GET', '/api/v1/memories'), 200, "A's memories");
  a.memory = memories.items[0].memory_id;
  const uploaded = await must(
    call(aUser, 'POST', `/api/v1/chat/sessions/${a.session}/attachments`, png),
    201,
    'the upload',
  );
  a.attachment = uploaded.attachment_id;
  const transcript = await must(
    call(aUser, 'GET', `/api/v1/chat/sessions/${a.session}/messages`),
    200,
    "A's transcript",
  );
  a.message = transcript.items[0].id;
  const checkpoints = await must(
    call(aUser, 'GET', `/api/v1/chat/sessions/${a.session}/checkpoints`),
    200,
    "A's checkpoints",
  );
  checkpoint = checkpoints.items[0].sequence;
  const panel = await must(
    call(aUser, 'POST', '/api/v1/panels', {
      title: secret,
      scope: 'session',
      session_id: a.session,
      document: { type: 'form', name: 'f', fields: [{ name: 'x' }] },
    }),
    201,
    "A's panel",
  );
  a.panel = panel.id;
  // A photo of A's library (the upload above landed one too).
  const photo = await must(
    call(aUser, 'POST', `/api/v1/photos?title=${secret}`, png),
    201,
    "A's photo",
  );
  a.photo = photo.photo_id;
  // A pending approval in a second session.
  const waiting = await turn(aUser, 'acme_t3', '/tool calculator {"expression": "6*7"}');
  const projection = await must(
    call(aUser, 'GET', `/api/v1/chat/sessions/${waiting}`),
    200,
    'the waiting session',
  );
  a.request = projection.pending_input.request_id;
  // An execution that blocks (what unblock acts on), A's own agent and mission, a personal session.
  const dispatched = await must(
    call(aUser, 'POST', '/api/v1/missions/blocking/executions', { execution_id: 'acme_exec' }),
    202,
    "A's execution",
  );
  a.execution = dispatched.execution_id;
  await until(
    () => call(aUser, 'GET', `/api/v1/executions/${a.execution}`),
    (answer) => JSON.parse(answer.text).status === 'blocked',
    "A's execution to block",
  );
  a.agent = 'acmebot';
  await must(
    call(aAdmin, 'PUT', '/api/v1/agents/acmebot', { instructions: secret }),
    200,
    "A's agent",
  );
  a.mission = 'acmemission';
  await must(
    call(aAdmin, 'PUT', '/api/v1/missions/acmemission', { prompt: secret }),
    200,
    "A's mission",
  );
  for (const kind of ['agent', 'mission'] as const) {
    const revisions = await must(
      call(aAdmin, 'GET', `/api/v1/${kind}s/acme${kind === 'agent' ? 'bot' : kind}/revisions`),
      200,
      `A's ${kind} revisions`,
    );
    aRevisions[kind] = revisions.items[0].revision;
  }
  a.workspace = (
    await must(
      call(aAdmin, 'POST', '/api/v1/workspaces', {
        name: secret,
        members: { users: ['acme-ann'] },
      }),
      201,
      "A's workspace",
    )
  ).workspace_id;
  a.budget = 'acmebudget';
  // A's schedule, from the configuration, switched by A's admin (a row of A's to keep).
  a.schedule = 'acme_nightly';
  await must(
    call(aAdmin, 'PATCH', '/api/v1/schedules/acme_nightly', { enabled: true }),
    200,
    "A's schedule switch",
  );
  await must(
    call(aAdmin, 'PUT', '/api/v1/budgets/acmebudget', {
      metric: 'cost_usd',
      period: 'month',
      limit: 1000,
    }),
    200,
    "A's budget",
  );
  aPersonal = (await must(call(aUser, 'POST', '/api/v1/agents/default/personal'), 201, 'personal'))
    .session_id;
  await until(
    () => server.db.query(`select 1 from webhook_deliveries where state = 'dead'`),
    (found) => found.rowCount > 0,
    "A's dead webhook delivery",
  );

  // Tenant B: a session of its own, for the routes that take two ids.
  b.session = await turn(bPrincipals.user, 'globex_t1', 'hello');
  Object.assign(b, {
    turn: 'globex_t1',
    request: 'none',
    attachment: 'none',
    memory: 'none',
    execution: 'none',
    agent: 'default',
    mission: 'blocking',
    budget: 'none',
    panel: 'none',
    photo: 'none',
    workspace: 'none',
    schedule: 'none',
    message: 'none',
  });
}, 180_000);
afterAll(async () => {
  await server?.close();
});

let made = 0;
/** Ids that exist nowhere, shaped like real ones. */
function missingIds(): Ids {
  made += 1;
  const id = (prefix: string) => `${prefix}01MISSING${String(made).padStart(16, '0')}`;
  return {
    session: id(''),
    turn: `missing_turn_${made}`,
    request: id('req_'),
    attachment: id('att_'),
    memory: id('mem_'),
    execution: `missing_exec_${made}`,
    agent: `missing_agent_${made}`,
    mission: `missing_mission_${made}`,
    budget: `missing_budget_${made}`,
    panel: id('pnl_'),
    photo: id('ph_'),
    workspace: id('ws_'),
    schedule: `missing_schedule_${made}`,
    message: id('msg_'),
  };
}

interface Probe {
  path: (ids: Ids) => string;
  body?: (ids: Ids) => unknown;
}

/**
 * Every route of the OpenAPI document that takes a resource id in its path, and how to
 * aim it at a given set of ids. A route added to the document without a line here fails
 * the first test.
 */
const byRoute: Record<string, Probe> = {
  'GET /api/v1/panels/{panel_id}': { path: (ids) => `/api/v1/panels/${ids.panel}` },
  'PUT /api/v1/panels/{panel_id}': {
    path: (ids) => `/api/v1/panels/${ids.panel}`,
    body: () => ({ title: 'taken', document: { type: 'markdown', text: 'x' } }),
  },
  'DELETE /api/v1/panels/{panel_id}': { path: (ids) => `/api/v1/panels/${ids.panel}` },
  'GET /api/v1/photos/{photo_id}': { path: (ids) => `/api/v1/photos/${ids.photo}` },
  'GET /api/v1/photos/{photo_id}/content': {
    path: (ids) => `/api/v1/photos/${ids.photo}/content`,
  },
  'PATCH /api/v1/photos/{photo_id}': {
    path: (ids) => `/api/v1/photos/${ids.photo}`,
    body: () => ({ title: 'taken' }),
  },
  'DELETE /api/v1/photos/{photo_id}': { path: (ids) => `/api/v1/photos/${ids.photo}` },
  'POST /api/v1/panels/{panel_id}/submit': {
    path: (ids) => `/api/v1/panels/${ids.panel}/submit`,
    body: () => ({ turn_id: `bp_${made}`, form: 'f', values: { x: 'y' } }),
  },
  // The OpenAI-compatible API: a response is a turn (`resp_` + its id).
  'GET /openai/v1/responses/{response_id}': {
    path: (ids) => `/openai/v1/responses/resp_${ids.turn}`,
  },
  'DELETE /openai/v1/responses/{response_id}': {
    path: (ids) => `/openai/v1/responses/resp_${ids.turn}`,
  },
  'POST /openai/v1/responses/{response_id}/cancel': {
    path: (ids) => `/openai/v1/responses/resp_${ids.turn}/cancel`,
    body: () => ({}),
  },
  // OpenAI Files: a file is a photo of the caller's library, its id the photo's.
  'GET /openai/v1/files/{file_id}': { path: (ids) => `/openai/v1/files/${ids.photo}` },
  'GET /openai/v1/files/{file_id}/content': {
    path: (ids) => `/openai/v1/files/${ids.photo}/content`,
  },
  'DELETE /openai/v1/files/{file_id}': { path: (ids) => `/openai/v1/files/${ids.photo}` },
  // AG-UI: a thread id may be a session id; the agent is one every tenant has.
  'POST /ag-ui/{agent}': {
    path: () => '/ag-ui/default',
    body: (ids) => ({
      threadId: ids.session,
      runId: 'cross_tenant_run',
      messages: [],
      resume: [{ interruptId: ids.request, status: 'resolved', payload: { approved: true } }],
    }),
  },
  // A cursor far ahead: a session B may see answers 409 at once instead of streaming.
  'GET /ag-ui/{agent}/threads/{thread_id}/events': {
    path: (ids) => `/ag-ui/default/threads/${ids.session}/events?after=999999999`,
  },
  // A2A: A's agent and its task (a turn) are missing to B.
  'GET /a2a/{agent}/.well-known/agent-card.json': {
    path: (ids) => `/a2a/${ids.agent}/.well-known/agent-card.json`,
  },
  'GET /a2a/{agent}/v0.3/.well-known/agent-card.json': {
    path: (ids) => `/a2a/${ids.agent}/v0.3/.well-known/agent-card.json`,
  },
  'GET /a2a/{agent}': { path: (ids) => `/a2a/${ids.agent}` },
  // A's task (a turn) through an agent every tenant has.
  'POST /a2a/{agent}': {
    path: () => '/a2a/default',
    body: (ids) => ({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: ids.turn } }),
  },
  'GET /api/v1/chat/sessions/{session_id}': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}`,
  },
  'PATCH /api/v1/chat/sessions/{session_id}': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}`,
    body: () => ({ visibility: 'private' }),
  },
  'DELETE /api/v1/chat/sessions/{session_id}': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}`,
  },
  'GET /api/v1/chat/sessions/{session_id}/messages': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/messages`,
  },
  'GET /api/v1/chat/sessions/{session_id}/events': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/events`,
  },
  'POST /api/v1/chat/sessions/{session_id}/turns/{turn_id}/cancel': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/turns/${ids.turn}/cancel`,
    body: () => ({ command_id: `cancel_${made}` }),
  },
  'POST /api/v1/chat/sessions/{session_id}/inputs/{request_id}': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/inputs/${ids.request}`,
    body: () => ({ expected_sequence: 1, approved: true }),
  },
  'POST /api/v1/admin/sessions/{session_id}/unpark': {
    path: (ids) => `/api/v1/admin/sessions/${ids.session}/unpark`,
  },
  'POST /api/v1/chat/sessions/{session_id}/attachments': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/attachments`,
    body: () => png,
  },
  'GET /api/v1/chat/sessions/{session_id}/attachments/{attachment_id}': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/attachments/${ids.attachment}`,
  },
  'GET /api/v1/chat/sessions/{session_id}/messages/{message_id}/speech': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/messages/${ids.message}/speech`,
  },
  'GET /api/v1/chat/sessions/{session_id}/files': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/files`,
  },
  'GET /api/v1/chat/sessions/{session_id}/checkpoints': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/checkpoints`,
  },
  'POST /api/v1/chat/sessions/{session_id}/fork': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/fork`,
    body: () => ({ at_sequence: checkpoint }),
  },
  'POST /api/v1/chat/sessions/{session_id}/rewind': {
    path: (ids) => `/api/v1/chat/sessions/${ids.session}/rewind`,
    body: () => ({ to_sequence: checkpoint }),
  },
  'DELETE /api/v1/memories/{memory_id}': { path: (ids) => `/api/v1/memories/${ids.memory}` },
  'GET /api/v1/executions/{execution_id}': { path: (ids) => `/api/v1/executions/${ids.execution}` },
  'POST /api/v1/executions/{execution_id}/cancel': {
    path: (ids) => `/api/v1/executions/${ids.execution}/cancel`,
    body: () => ({ command_id: `xc_${made}` }),
  },
  'POST /api/v1/executions/{execution_id}/unblock': {
    path: (ids) => `/api/v1/executions/${ids.execution}/unblock`,
    body: () => ({ command_id: `xu_${made}`, note: 'go' }),
  },
  'GET /api/v1/agents/{name}/tools': { path: (ids) => `/api/v1/agents/${ids.agent}/tools` },
  'POST /api/v1/agents/{name}/personal': { path: (ids) => `/api/v1/agents/${ids.agent}/personal` },
  'POST /api/v1/agents/{name}/personal/archive': {
    path: (ids) => `/api/v1/agents/${ids.agent}/personal/archive`,
  },
  'GET /api/v1/agents/{name}': { path: (ids) => `/api/v1/agents/${ids.agent}` },
  'DELETE /api/v1/agents/{name}': { path: (ids) => `/api/v1/agents/${ids.agent}` },
  'GET /api/v1/missions/{name}': { path: (ids) => `/api/v1/missions/${ids.mission}` },
  'POST /api/v1/missions/{name}/executions': {
    path: (ids) => `/api/v1/missions/${ids.mission}/executions`,
    body: () => ({ execution_id: `x_${made}` }),
  },
  'DELETE /api/v1/missions/{name}': { path: (ids) => `/api/v1/missions/${ids.mission}` },
  'GET /api/v1/agents/{name}/revisions': {
    path: (ids) => `/api/v1/agents/${ids.agent}/revisions`,
  },
  'GET /api/v1/agents/{name}/shipped': { path: (ids) => `/api/v1/agents/${ids.agent}/shipped` },
  // A's revision number through an agent every tenant has; a missing one is a number
  // no definition ever had.
  'GET /api/v1/agents/{name}/revisions/{revision}': {
    path: (ids) =>
      `/api/v1/agents/default/revisions/${ids.agent === a.agent ? aRevisions.agent : 999_999_999}`,
  },
  'GET /api/v1/missions/{name}/revisions': {
    path: (ids) => `/api/v1/missions/${ids.mission}/revisions`,
  },
  'GET /api/v1/missions/{name}/shipped': {
    path: (ids) => `/api/v1/missions/${ids.mission}/shipped`,
  },
  'GET /api/v1/missions/{name}/revisions/{revision}': {
    path: (ids) =>
      `/api/v1/missions/blocking/revisions/${ids.mission === a.mission ? aRevisions.mission : 999_999_999}`,
  },
  'DELETE /api/v1/budgets/{budget_id}': { path: (ids) => `/api/v1/budgets/${ids.budget}` },
  'PATCH /api/v1/schedules/{name}': {
    path: (ids) => `/api/v1/schedules/${ids.schedule}`,
    body: () => ({ enabled: false }),
  },
  'GET /api/v1/workspaces/{workspace_id}': {
    path: (ids) => `/api/v1/workspaces/${ids.workspace}`,
  },
  'PATCH /api/v1/workspaces/{workspace_id}': {
    path: (ids) => `/api/v1/workspaces/${ids.workspace}`,
    body: () => ({ name: 'taken over', members: { users: [] } }),
  },
  'DELETE /api/v1/workspaces/{workspace_id}': {
    path: (ids) => `/api/v1/workspaces/${ids.workspace}`,
  },
  // Last: B's PUT of A's name creates B's own definition of that name (A's stays A's).
  'PUT /api/v1/agents/{name}': {
    path: (ids) => `/api/v1/agents/${ids.agent}`,
    body: () => ({ instructions: 'Ours.' }),
  },
  'PUT /api/v1/missions/{name}': {
    path: (ids) => `/api/v1/missions/${ids.mission}`,
    body: () => ({ prompt: 'Ours.' }),
  },
  // B's PUT of A's budget id creates B's own budget of that id (A's stays A's).
  'PUT /api/v1/budgets/{budget_id}': {
    path: (ids) => `/api/v1/budgets/${ids.budget}`,
    body: () => ({ metric: 'tokens', period: 'month', limit: 1_000_000_000 }),
  },
};

/** Ids inside request bodies: each aimed at A's and at a missing one, from B's session. */
const byBody: Record<string, { method: string; path: string; body: (ids: Ids) => unknown }> = {
  // A2A 0.3's method names reach the same handlers as 1.0's.
  "A's task through A2A 0.3's tasks/get": {
    method: 'POST',
    path: '/a2a/default',
    body: (ids) => ({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: ids.turn } }),
  },
  "A's session continued by A2A 0.3's message/send": {
    method: 'POST',
    path: '/a2a/default',
    body: (ids) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: `b03_${made}`,
          role: 'user',
          contextId: ids.session,
          parts: [{ kind: 'text', text: 'let me in' }],
        },
      },
    }),
  },
  "a turn into A's session": {
    method: 'POST',
    path: '/api/v1/chat/turns',
    body: (ids) => ({ session_id: ids.session, turn_id: `bt_${made}`, message: 'let me in' }),
  },
  "A's request pressed as an option in B's session": {
    method: 'POST',
    path: '/api/v1/chat/turns',
    body: (ids) => ({
      session_id: b.session,
      turn_id: `bo_${made}`,
      message: '',
      option: { request_id: ids.request, value: 'yes' },
    }),
  },
  "A's attachment sent in B's session": {
    method: 'POST',
    path: '/api/v1/chat/turns',
    body: (ids) => ({
      session_id: b.session,
      turn_id: `ba_${made}`,
      message: 'look',
      attachments: [ids.attachment],
    }),
  },
  "A's agent for B's execution": {
    method: 'POST',
    path: '/api/v1/missions/blocking/executions',
    body: (ids) => ({ execution_id: `bx_${made}`, agent: ids.agent }),
  },
  "A's session as B's active session": {
    method: 'PUT',
    path: '/api/v1/me/preferences',
    body: (ids) => ({ active_session_id: ids.session }),
  },
  "A's agent as B's active agent": {
    method: 'PUT',
    path: '/api/v1/me/preferences',
    body: (ids) => ({ active_agent: ids.agent }),
  },
  "A's workspace as B's active workspace": {
    method: 'PUT',
    path: '/api/v1/me/preferences',
    body: (ids) => ({ workspace_id: ids.workspace }),
  },
  "A's workspace for B's session": {
    method: 'POST',
    path: '/api/v1/chat/sessions',
    body: (ids) => ({ workspace_id: ids.workspace }),
  },
  "A's workspace for B's execution": {
    method: 'POST',
    path: '/api/v1/missions/blocking/executions',
    body: (ids) => ({ execution_id: `bw_${made}`, workspace_id: ids.workspace }),
  },
  "A's session for B's panel": {
    method: 'POST',
    path: '/api/v1/panels',
    body: (ids) => ({
      title: 'x',
      scope: 'session',
      session_id: ids.session,
      document: { type: 'markdown', text: 'x' },
    }),
  },
  "A's attachment copied into B's photo library": {
    method: 'POST',
    path: '/api/v1/photos',
    body: (ids) => ({ attachment_id: ids.attachment }),
  },
  "A's agent for B's session": {
    method: 'POST',
    path: '/api/v1/chat/sessions',
    body: (ids) => ({ agent: ids.agent }),
  },
  "A's photo as a file in B's response": {
    method: 'POST',
    path: '/openai/v1/responses',
    body: (ids) => ({
      model: 'default',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'look' },
            { type: 'input_image', file_id: ids.photo },
          ],
        },
      ],
    }),
  },
  "A's photo as a file in B's chat completion": {
    method: 'POST',
    path: '/openai/v1/chat/completions',
    body: (ids) => ({
      model: 'default',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'file', file: { file_id: ids.photo } },
          ],
        },
      ],
    }),
  },
};

/**
 * Every list route of the document (a GET without a path parameter), with the queries B
 * tries on it: a route added to the document without a line here fails the list test.
 */
const listQueries: Record<string, string[]> = {
  'GET /api/v1/chat/sessions': ['', '?limit=200'],
  'GET /api/v1/me/preferences': [''],
  // The operator's voices: the same catalog for every tenant.
  'GET /api/v1/voices': [''],
  'GET /api/v1/panels': ['', '?scope=session', '?scope=workspace'],
  'GET /api/v1/panels/palette': [''],
  'GET /api/v1/photos': ['', '?origin=upload', '?origin=generated', '?limit=200'],
  // A stream: what it carries across tenants is test/user-events.test.ts's.
  'GET /api/v1/me/events': [''],
  'GET /api/v1/inputs': ['', '?state=pending'],
  'GET /api/v1/memories': ['', '?user=*', '?user=acme-ann', '?agent=acmebot&user=*'],
  'GET /api/v1/executions': ['', '?user=acme-ann', '?mission=blocking', '?status=blocked'],
  'GET /api/v1/missions': ['', '?namespace=default'],
  'GET /api/v1/agents': ['', '?namespace=default'],
  'GET /api/v1/schedules': [''],
  'GET /api/v1/usage': [
    '',
    '?group_by=tenant',
    '?group_by=agent',
    '?group_by=model',
    '?group_by=user',
    '?group_by=day',
  ],
  'GET /api/v1/budgets': [''],
  'GET /api/v1/workspaces': [''],
  'GET /api/v1/admin/webhooks': ['', '?dead_limit=500'],
  'GET /api/v1/models': [''],
  'GET /openai/v1/models': [''],
  'GET /openai/v1/files': ['', '?limit=1'],
  // The MCP server has no stream of its own (405); its tools are listed in a session.
  'GET /mcp': [''],
  'GET /api/v1/me': [''],
  'GET /healthz': [''],
  'GET /readyz': [''],
  'GET /metrics': [''],
  'GET /api/v1/openapi.json': [''],
};

/** A body as B reads it, with the ids it was asked about named by kind, and no clock. */
function normalized(text: string, ids: Ids): string {
  let out = text;
  for (const [kind, id] of Object.entries(ids)) out = out.split(id).join(`<${kind}>`);
  return out.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>');
}

/** Every string of A's that B must never receive. */
function aMarkers(): string[] {
  return [
    secret,
    shellSecret,
    a.session,
    a.request,
    a.attachment,
    a.photo,
    a.memory,
    a.execution,
    a.agent,
    a.mission,
    a.budget,
    a.workspace,
    a.schedule,
    aPersonal,
    'acme-ann',
    'acme-root',
  ];
}

/**
 * B aims one request at A's ids and the same at missing ones: the answers must be equal,
 * a refusal must write nothing, and nothing of A may show.
 */
async function sameAsMissing(
  principal: Record<string, string>,
  method: string,
  aim: (ids: Ids) => { path: string; body?: unknown },
  foreignIds: Ids,
  what: string,
  keep: Partial<Ids> = {},
): Promise<number> {
  const missing = { ...missingIds(), ...keep };
  const before = await fingerprint(server.db);
  const foreignCall = aim(foreignIds);
  const foreign = await call(principal, method, foreignCall.path, foreignCall.body);
  if (foreign.status >= 400) {
    expect(changedTables(before, await fingerprint(server.db)), `${what} wrote`).toEqual([]);
  }
  const missingCall = aim(missing);
  const absent = await call(principal, method, missingCall.path, missingCall.body);
  expect(foreign.status, `${what}: ${foreign.text.slice(0, 200)}`).toBe(absent.status);
  expect(normalized(foreign.text, foreignIds), what).toBe(normalized(absent.text, missing));
  for (const marker of aMarkers()) {
    if (Object.values(foreignIds).includes(marker)) continue;
    expect(foreign.text, `${what} shows ${marker}`).not.toContain(marker);
  }
  return foreign.status;
}

describe('the cross-tenant matrix', () => {
  it('has a line for every route of the document that takes an id in its path', () => {
    const withIds: string[] = [];
    for (const [path, item] of Object.entries(openapiDocument.paths)) {
      if (!path.includes('{')) continue;
      for (const method of ['get', 'put', 'post', 'delete', 'patch']) {
        if (method in item) withIds.push(`${method.toUpperCase()} ${routeShape(path)}`);
      }
    }
    const lines = new Set(Object.keys(byRoute).map((route) => routeShape(route)));
    expect(withIds.filter((route) => !lines.has(route))).toEqual([]);
    expect([...lines].filter((route) => !withIds.includes(route))).toEqual([]);
  });

  it("B's agent's tools reach none of A's memory, workspace or session", async () => {
    const sessionOf = (found: any[], tool: string) =>
      found.findLast((result) => result.tool === tool);
    // What A's own tools see: the same calls find A's data (so a leak would show).
    await turn(
      aUser,
      'acme_tools',
      ['/tool recall {"query": "marmalade"}', '/tool shell {"command": "cat note.txt"}'].join('\n'),
      a.session,
    );
    const mine = await toolResults(a.session);
    expect(JSON.stringify(sessionOf(mine, 'recall'))).toContain(secret);
    expect(JSON.stringify(sessionOf(mine, 'shell'))).toContain(shellSecret);

    const skillFile = relative(join(skillsDir, 'refunds'), aNote);
    const apiUrl = `http://127.0.0.1:${port}/api/v1/chat/sessions/${a.session}/messages`;
    await turn(
      bPrincipals.user,
      'globex_tools',
      [
        '/tool recall {"query": "marmalade secret plan"}',
        `/tool forget {"memory_id": "${a.memory}"}`,
        `/tool shell {"command": "cat note.txt; ls -a ..; cat ${aNote}; find / -name note.txt 2>/dev/null; true"}`,
        `/tool load_skill {"name": "refunds", "file": "${skillFile}"}`,
        `/tool http_fetch {"url": "${apiUrl}"}`,
      ].join('\n'),
      b.session,
    );
    const theirs = await toolResults(b.session);
    expect(sessionOf(theirs, 'recall')).toMatchObject({ ok: true, result: { memories: [] } });
    expect(sessionOf(theirs, 'forget')).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(sessionOf(theirs, 'shell')).toMatchObject({ ok: true });
    expect(sessionOf(theirs, 'load_skill')).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    // The API asks a key of any caller, B's tools included: nothing of A comes back.
    expect(sessionOf(theirs, 'http_fetch')).toMatchObject({ ok: true, result: { status: 401 } });
    for (const marker of [secret, shellSecret]) {
      expect(JSON.stringify(theirs), marker).not.toContain(marker);
    }
    // A's memory survived B's forget (B's turn committed).
    const kept = await must(call(aUser, 'GET', '/api/v1/memories'), 200, "A's memories");
    expect(kept.items.map((item: any) => item.memory_id)).toContain(a.memory);
  });

  describe('with the API alone (no background loop writes: only requests do)', () => {
    beforeAll(async () => {
      server = await server.restart({ api: true, worker: false });
    });

    it("answers B's user and admin on A's ids exactly as on missing ones, on every route", async () => {
      const aBefore = await tenantFingerprint(server.db, 'acme');
      for (const [name, principal] of Object.entries(bPrincipals)) {
        // First: once B's admin has PUT a definition of A's name, B has one of its own.
        for (const [what, probe] of Object.entries(byBody)) {
          const aim = (ids: Ids) => ({ path: probe.path, body: probe.body(ids) });
          await sameAsMissing(principal, probe.method, aim, a, `B ${name}: ${what}`);
        }
        for (const [route, probe] of Object.entries(byRoute)) {
          const method = route.split(' ')[0] as string;
          const aim = (ids: Ids) => ({ path: probe.path(ids), body: probe.body?.(ids) });
          const status = await sameAsMissing(principal, method, aim, a, `B ${name}: ${route}`);
          // Only a PUT of a definition succeeds (B's own, of the same name); nothing else does.
          if (method !== 'PUT') expect(status, `B ${name}: ${route}`).toBeGreaterThanOrEqual(400);
          // Routes with two ids: B's own session with A's second id.
          if ((route.match(/\{/g) ?? []).length > 1) {
            const mixed = {
              ...b,
              turn: a.turn,
              request: a.request,
              attachment: a.attachment,
              message: a.message,
            };
            await sameAsMissing(
              principal,
              method,
              aim,
              mixed,
              `B ${name}: ${route} (B's session, A's id)`,
              { session: b.session },
            );
          }
        }
      }
      expect(changedTables(aBefore, await tenantFingerprint(server.db, 'acme'))).toEqual([]);
      // B's own definitions of A's names go again, so that B's lists show no such name.
      await must(call(bPrincipals.admin, 'DELETE', `/api/v1/agents/${a.agent}`), 200, 'cleanup');
      await must(
        call(bPrincipals.admin, 'DELETE', `/api/v1/missions/${a.mission}`),
        200,
        'cleanup',
      );
      await must(call(bPrincipals.admin, 'DELETE', `/api/v1/budgets/${a.budget}`), 200, 'cleanup');
    });

    it("lists none of A's items to B, on every list route of the document", async () => {
      const lines = new Set(Object.keys(listQueries).map((route) => routeShape(route)));
      const lists = Object.entries(openapiDocument.paths)
        .filter(([path, item]) => !path.includes('{') && 'get' in item)
        .map(([path]) => `GET ${routeShape(path)}`);
      expect(lists.filter((route) => !lines.has(route))).toEqual([]);
      for (const [name, principal] of Object.entries(bPrincipals)) {
        for (const [route, queries] of Object.entries(listQueries)) {
          for (const query of queries) {
            const path = `${route.slice('GET '.length)}${query}`;
            const answer = await call(principal, 'GET', path);
            expect(answer.status, `B ${name}: ${path}`).toBeLessThan(500);
            for (const marker of aMarkers()) {
              expect(answer.text, `B ${name}: ${path} shows ${marker}`).not.toContain(marker);
            }
          }
        }
      }
      // The same lists show A its own items (the markers would be seen if they leaked).
      const own = await call(aAdmin, 'GET', '/api/v1/memories?user=*');
      expect(own.text).toContain(secret);
      const usage = await must(
        call(bPrincipals.admin, 'GET', '/api/v1/usage?group_by=tenant'),
        200,
        'usage',
      );
      expect(JSON.stringify(usage)).not.toContain('acme');
      // A's own report per user names A's users (what B's must never show).
      const aByUser = await must(call(aAdmin, 'GET', '/api/v1/usage?group_by=user'), 200, 'usage');
      expect(aByUser.items.map((item: any) => item.key)).toContain('acme-ann');
    });
  });
});
