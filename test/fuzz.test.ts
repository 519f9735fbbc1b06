import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredRoutes, routeShape } from '../src/api/routes.js';
import { httpRequests } from '../src/metrics.js';
import { saveCredential } from '../src/store/saveCredential.js';
import { recordCircuit } from '../src/store/recordCircuit.js';
import { engine } from './support/db.js';
import {
  blindColumns,
  changedTables,
  fingerprint,
  fingerprintedTables,
  nextTransactionId,
} from './support/fingerprint.js';
import { until } from './support/poll.js';
import { FakeTelegram, telegramMessageUpdate } from './support/platforms/telegram.js';
import { rawRequest, type RawResponse } from './support/raw.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * A seeded fuzzer over every route (docs/reliability.md, "The fuzzer"). Each request
 * starts from a valid one and is mutated (fields replaced by hostile values, removed,
 * added; whole bodies replaced; paths, query strings and headers garbled, percent-encoded,
 * NUL-laden). The server must never answer 5xx, every refusal is a coded
 * `{error, message}`, and a request it rejects (4xx) — or any GET — must leave every table
 * exactly as it was (a content hash of every row of every table). The seed is printed with
 * every failure: the same seed replays the same requests (PARLEY_FUZZ_SEED,
 * PARLEY_FUZZ_REQUESTS to override).
 *
 * The database is first given a row in (nearly) every table by real use, with the worker
 * running; then the process is restarted as the API alone, so that no background loop
 * (worker, executions, scheduler, platform outbox, webhooks) writes during the run: only
 * requests do.
 */

const seed = Number(process.env.PARLEY_FUZZ_SEED ?? 20261201);
// 1,500 on PostgreSQL, 1,000 on PGlite (slower per request); PARLEY_FUZZ_REQUESTS for more.
const total = Number(process.env.PARLEY_FUZZ_REQUESTS ?? (engine === 'postgres' ? 1500 : 1000));
const telegramToken = '123456:fuzz-telegram-token';
const telegramSecret = 'fuzz-telegram-secret';

/** mulberry32: small, fast, good enough to pick mutations reproducibly. */
function prng(start: number): () => number {
  let state = start >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A webhook receiver that accepts everything: the deliveries' rows are what matters. */
async function startReceiver(): Promise<{ url: string; close: () => Promise<void> }> {
  const receiver: Server = createServer((incoming, answer) => {
    incoming.resume();
    incoming.on('end', () => answer.writeHead(204).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
    close: () => {
      receiver.closeAllConnections();
      return new Promise((resolve) => receiver.close(() => resolve()));
    },
  };
}

const png = Buffer.concat([
  Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
  Buffer.alloc(40, 7),
]);

let server: TestServer;
let telegram: FakeTelegram;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let sessionId = '';
let executionId = '';
let executionSessionId = '';
let blockedExecutionId = '';
let checkpoint = 0;
let turnId = '';
let requestId = '';
let expectedSequence = 0;
let memoryId = '';
let attachmentId = '';
let panelId = '';
/** A photo of the library (a chat upload lands one too). */
let photoId = '';
/** A message of `sessionId` read aloud once in setup: its speech is kept (a GET then writes nothing). */
let spokenMessageId = '';
/** An MCP session of the API-only process (sessions live in the process that made them). */
let mcpSessionId = '';
/** Sessions made for the fuzzer's DELETEs, so that they never take the others' ids. */
const doomedSessionIds: string[] = [];
/** A workspace with a session in it; and workspaces made for the fuzzer's DELETEs. */
let workspaceId = '';
const doomedWorkspaceIds: string[] = [];
/** Requests per route (`METHOD /url` as Fastify has it) counted before the run. */
let reachedBefore = new Map<string, number>();

beforeAll(async () => {
  telegram = await FakeTelegram.start(telegramToken);
  receiver = await startReceiver();
  const full = await startTestServer(
    {
      server: { blocking_wait_ms: 300 },
      agents: {
        default: { tools: { calculator: 'approve', remember: 'allow' } },
        other: { greeting: 'hi' },
      },
      missions: {
        once: { prompt: 'Write the report.' },
        looping: { prompt: 'Tidy.', loop_prompt: '/decide continue', max_iterations: 2 },
        blocking: { prompt: 'Deploy.', loop_prompt: '/decide blocked' },
      },
      // Every second; `skip` keeps it to one blocked execution and skipped fires.
      schedules: { each_second: { mission: 'blocking', cron: '* * * * * *' } },
      adapters: {
        telegram: {
          tenant: 'default',
          bot_token_env: 'FUZZ_TG_TOKEN',
          secret_token_env: 'FUZZ_TG_SECRET',
          api_url: telegram.server.url,
        },
      },
      // A2A push configs: to the receiver, or (the fuzzer's) a host that never resolves.
      a2a: {
        push_notifications: {
          allow_hosts: ['push.invalid', new URL(receiver.url).host],
          allow_private: true,
        },
      },
      webhooks: {
        audit: {
          url: receiver.url,
          events: ['message', 'done'],
          secret_env: 'FUZZ_HOOK',
          tenants: '*',
        },
      },
    },
    {
      FUZZ_TG_TOKEN: telegramToken,
      FUZZ_TG_SECRET: telegramSecret,
      FUZZ_HOOK: `whsec_${Buffer.alloc(32, 9).toString('base64')}`,
    },
  );
  server = full;
  // An execution that ran to its end: its session has a checkpoint to fork and rewind to.
  const dispatched = await request(full.url, 'POST', '/api/v1/missions/once/executions', {
    execution_id: 'fuzz_exec',
  });
  executionId = dispatched.body.execution_id;
  const finished = await until(
    async () => (await request(full.url, 'GET', `/api/v1/executions/${executionId}`)).body,
    (execution) => execution.status === 'success',
    'the execution',
  );
  executionSessionId = finished.session_id;
  const checkpoints = await request(
    full.url,
    'GET',
    `/api/v1/chat/sessions/${executionSessionId}/checkpoints`,
  );
  checkpoint = checkpoints.body.items[0].sequence;
  // The schedule's execution, blocked (what unblock acts on), and its fires.
  const blocked = await until(
    async () => (await request(full.url, 'GET', '/api/v1/executions?status=blocked')).body,
    (page) => page.items.length > 0,
    'the scheduled execution to block',
  );
  blockedExecutionId = blocked.items[0].execution_id;
  // A conversation with a memory, an options offer, an attachment and a rewind.
  const remembered = await request(full.url, 'POST', '/api/v1/chat/turns', {
    turn_id: 'fuzz_memory',
    message: '/tool remember {"text": "the fuzzer likes tea"}',
  });
  const chatId = remembered.body.session_id;
  const replies = (count: number) =>
    until(
      async () =>
        (await request(full.url, 'GET', `/api/v1/chat/sessions/${chatId}/checkpoints`)).body,
      (page) => page.items.length === count,
      `reply ${count}`,
    );
  // One at a time: a message sent while the first runs would be folded into its reply.
  await replies(1);
  await request(full.url, 'POST', '/api/v1/chat/turns', {
    session_id: chatId,
    turn_id: 'fuzz_options',
    message: '/options red|green',
  });
  const chat = await replies(2);
  // An A2A push config on a turn: its row, and its notification among the deliveries.
  const pushConfig = await request(full.url, 'POST', '/a2a/default', {
    jsonrpc: '2.0',
    id: 1,
    method: 'CreateTaskPushNotificationConfig',
    params: { taskId: 'fuzz_options', url: receiver.url, token: 'fuzz-token' },
  });
  expect(pushConfig.status, 'the push config').toBe(200);
  const memories = await request(full.url, 'GET', '/api/v1/memories');
  memoryId = memories.body.items[0].memory_id;
  const uploaded = await fetch(`${full.url}/api/v1/chat/sessions/${chatId}/attachments`, {
    method: 'POST',
    headers: { 'content-type': 'image/png' },
    body: png,
  });
  expect(uploaded.status, 'the upload').toBe(201);
  attachmentId = ((await uploaded.json()) as { attachment_id: string }).attachment_id;
  const writes = [
    await request(full.url, 'POST', `/api/v1/chat/sessions/${chatId}/rewind`, {
      to_sequence: chat.items[chat.items.length - 1].sequence,
    }),
    await request(full.url, 'POST', '/api/v1/agents/default/personal', {}),
    await request(full.url, 'PUT', '/api/v1/me/preferences', {
      language: 'en-GB',
      timezone: 'Europe/London',
    }),
    await request(full.url, 'PUT', '/api/v1/agents/other', { greeting: 'hello from the tenant' }),
    // Far above what the fuzzer's turns use: it never stops one.
    await request(full.url, 'PUT', '/api/v1/budgets/fuzz_month', {
      metric: 'tokens',
      period: 'month',
      limit: 1e10,
    }),
    await request(full.url, 'POST', '/api/v1/executions/fuzz_exec/cancel', { command_id: 'c_1' }),
    // The schedule's switch: off (its blocked execution and fires are there already).
    await request(full.url, 'PATCH', '/api/v1/schedules/each_second', { enabled: false }),
    await request(full.url, 'POST', `/api/v1/chat/sessions/${chatId}/turns/fuzz_memory/cancel`, {
      command_id: 'c_2',
    }),
  ];
  expect(writes.map((answer) => answer.status)).toEqual([200, 201, 200, 200, 200, 200, 200, 200]);
  // A panel with a form, beside the conversation.
  const panel = await request(full.url, 'POST', '/api/v1/panels', {
    title: 'Fuzz',
    scope: 'session',
    session_id: chatId,
    document: { type: 'form', name: 'f', fields: [{ name: 'x', required: true }] },
  });
  expect(panel.status, 'the panel').toBe(201);
  panelId = panel.body.id;
  // A photo of the library, uploaded with a title.
  const photo = await fetch(`${full.url}/api/v1/photos?title=Fuzz`, {
    method: 'POST',
    headers: { 'content-type': 'image/png' },
    body: png,
  });
  expect(photo.status, 'the photo').toBe(201);
  photoId = ((await photo.json()) as { photo_id: string }).photo_id;
  // A workspace panel made and deleted: a removal the user stream tells desktops of.
  const gone = await request(full.url, 'POST', '/api/v1/panels', {
    title: 'Gone',
    scope: 'workspace',
    document: { type: 'markdown', text: 'gone' },
  });
  expect(gone.status, 'the removed panel').toBe(201);
  const removed = await request(full.url, 'DELETE', `/api/v1/panels/${gone.body.id}`);
  expect(removed.status, 'its removal').toBe(204);
  // A provider circuit's change of state, as a worker reports it (providers/circuit.ts).
  await recordCircuit(full.db, { provider: 'demo', state: 'closed', failures: 0 });
  // A credential reference, by the statement an external_auth answer runs (no tool of the
  // fuzzer's agents asks for authorization).
  await saveCredential(full.db, {
    tenant: 'default',
    user: 'local',
    provider: 'fuzzhub',
    reference: 'vault:fuzz/1',
  });
  // A Telegram conversation answered through the outbox.
  await fetch(`${full.url}/adapters/telegram/webhook`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-telegram-bot-api-secret-token': telegramSecret,
    },
    body: telegramMessageUpdate({ updateId: 1, chatId: 42, messageId: 1, userId: 42, text: 'hi' }),
  });
  await until(
    () => telegram.inChat('42'),
    (sent) => sent.some((message) => /You said: hi/.test(message.text)),
    'the Telegram reply',
  );
  // An AG-UI thread (its session and the thread's row), run to its end.
  const aguiRun = await fetch(`${full.url}/ag-ui/other`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      threadId: 'fuzz-thread',
      runId: 'fuzz_agui',
      messages: [{ id: 'm1', role: 'user', content: 'hello' }],
    }),
  });
  expect(await aguiRun.text(), 'the AG-UI run').toContain('RUN_FINISHED');
  // A session with a pending approval.
  const admitted = await request(full.url, 'POST', '/api/v1/chat/turns', {
    turn_id: 'fuzz_base',
    message: '/tool calculator {"expression": "1+1"}',
  });
  sessionId = admitted.body.session_id;
  for (let index = 0; index < 3; index++) {
    const doomed = await request(full.url, 'POST', '/api/v1/chat/sessions', { title: 'doomed' });
    doomedSessionIds.push(doomed.body.session_id as string);
  }
  const workspace = await request(full.url, 'POST', '/api/v1/workspaces', {
    name: 'Fuzz space',
    members: { roles: ['admin'], users: ['local'] },
  });
  expect(workspace.status, 'the workspace').toBe(201);
  workspaceId = workspace.body.workspace_id;
  const grouped = await request(full.url, 'POST', '/api/v1/chat/sessions', {
    title: 'grouped',
    workspace_id: workspaceId,
  });
  expect(grouped.status, 'a session in the workspace').toBe(201);
  for (let index = 0; index < 2; index++) {
    const doomed = await request(full.url, 'POST', '/api/v1/workspaces', {
      name: `doomed ${index}`,
    });
    doomedWorkspaceIds.push(doomed.body.workspace_id as string);
  }
  turnId = 'fuzz_base';
  const pending = await until(
    async () => (await request(full.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body,
    (projection) => projection.pending_input !== null,
    'the approval request',
  );
  requestId = pending.pending_input.request_id;
  expectedSequence = pending.pending_input.expected_sequence;
  // A message read aloud: the speech table's row. The first GET of a message's speech
  // makes and keeps it; the fuzzer's GETs of it then read what was kept.
  const transcript = await request(full.url, 'GET', `/api/v1/chat/sessions/${sessionId}/messages`);
  spokenMessageId = transcript.body.items[0].id;
  const spoken = await fetch(
    `${full.url}/api/v1/chat/sessions/${sessionId}/messages/${spokenMessageId}/speech`,
  );
  expect(spoken.status, 'the speech of a message').toBe(200);
  await spoken.arrayBuffer();
  await until(
    async () =>
      (await full.db.query(`select 1 from webhook_deliveries where state = 'delivered'`)).rowCount,
    (delivered) => delivered > 0,
    'a webhook delivery',
  );
  // From here on only requests write: the API alone, on the same database.
  server = await full.restart({ api: true, worker: false });
  const initialized = await fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'fuzz', version: '1' },
      },
    }),
  });
  await initialized.text();
  mcpSessionId = initialized.headers.get('mcp-session-id') ?? '';
  expect(mcpSessionId, 'the MCP session').not.toBe('');
  reachedBefore = await reachedRoutes();
}, 180_000);
afterAll(async () => {
  await server?.close();
  await telegram?.close();
  await receiver?.close();
});

/** Requests answered per route URL so far, from the process's own metric. */
async function reachedRoutes(): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const { labels, value } of (await httpRequests.get()).values) {
    const route = String(labels.route);
    counts.set(route, (counts.get(route) ?? 0) + value);
  }
  return counts;
}

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | null;
}

function generator(random: () => number) {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const hostileStrings = [
    '',
    ' ',
    'a',
    'x'.repeat(129),
    'x'.repeat(600),
    'y'.repeat(40_000),
    '\u0000',
    'a\u0000b',
    '\ud800',
    'a\udfffb',
    '\ud83d',
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'valueOf',
    '../../etc/passwd',
    "'; drop table sessions; --",
    '💬 emoji',
    '\u202eevil',
    'null',
    '-1',
    '99999999999999999999',
    '1e400',
    '%00',
    'default',
    'other',
  ];
  const hostileValues: unknown[] = [
    ...hostileStrings,
    0,
    -1,
    1.5,
    1e20,
    -1e20,
    2 ** 53,
    Number.MAX_SAFE_INTEGER + 2,
    true,
    false,
    null,
    [],
    [1, 2],
    ['a'],
    {},
    { a: 1 },
    { __proto__: { polluted: true } },
  ];
  const real = () =>
    pick([
      sessionId,
      turnId,
      requestId,
      String(expectedSequence),
      executionId,
      executionSessionId,
      String(checkpoint),
      memoryId,
      attachmentId,
    ]);
  const value = () => (random() < 0.2 ? real() : pick(hostileValues));
  const segment = () =>
    // The first pass (one request per entry) aims at real ids, so that it reaches each route.
    pick(
      firstPass
        ? [sessionId, executionId, memoryId, 'default']
        : [
            sessionId,
            sessionId,
            turnId,
            requestId,
            executionId,
            executionSessionId,
            blockedExecutionId,
            memoryId,
            attachmentId,
            'once',
            'default',
            '01NOSUCHSESSION0000000000',
            '%00',
            'ab%00cd',
            '%zz',
            '%ff%fe',
            '%ed%a0%80',
            '%2F..%2F',
            'x'.repeat(150),
            '__proto__',
            'constructor',
            '%F0%9F%92%AC',
            encode(pick(hostileStrings)),
          ],
    );
  const queryValue = () =>
    pick([
      '0',
      '-1',
      '1.5',
      '99999999999999999999',
      '999999999999999',
      'abc',
      '%00',
      '%zz',
      encode(pick(hostileStrings)),
      Buffer.from(JSON.stringify([pick(hostileValues), pick(hostileValues)])).toString('base64url'),
      Buffer.from(JSON.stringify(['2026-13-45T99:99:99.999Z', 'x'])).toString('base64url'),
      Buffer.from('not json').toString('base64url'),
    ]);
  const agentOrMission = () => pick(['default', 'other', 'once', 'looping', segment()]);
  const bare = (method: string, path: string): FuzzRequest => ({
    method,
    path,
    headers: {},
    body: null,
  });
  const platformEvent = (path: string) =>
    json('POST', path, { type: 'event_callback', event: { type: 'message', text: 'hi' } });

  /**
   * One entry per route of the app, keyed `METHOD /path` as the OpenAPI document spells
   * it: a route the app registers without an entry here fails the coverage test.
   */
  const routes: Record<string, () => FuzzRequest> = {
    'POST /api/v1/chat/sessions': () =>
      json('POST', '/api/v1/chat/sessions', {
        agent: 'default',
        title: 't',
        workspace_id: pick([undefined, workspaceId, value()]),
      }),
    'GET /api/v1/chat/sessions': () =>
      get(
        `/api/v1/chat/sessions?${query({ limit: '5', cursor: queryValue(), workspace_id: pick([workspaceId, queryValue()]) })}`,
      ),
    'GET /api/v1/chat/sessions/{session_id}': () => get(`/api/v1/chat/sessions/${segment()}`),
    'GET /api/v1/chat/sessions/{session_id}/messages': () =>
      get(
        `/api/v1/chat/sessions/${segment()}/messages?${query({ before: queryValue(), limit: '3' })}`,
      ),
    'PATCH /api/v1/chat/sessions/{session_id}': () =>
      json('PATCH', `/api/v1/chat/sessions/${segment()}`, {
        visibility: pick(['private', 'tenant', 'room', 'public', '']),
        members: pick([['ann'], [], ['a'.repeat(300)], 'ann', [7]]),
        workspace_id: pick([undefined, null, workspaceId, value()]),
      }),
    'DELETE /api/v1/chat/sessions/{session_id}': () =>
      bare(
        'DELETE',
        `/api/v1/chat/sessions/${pick([...doomedSessionIds, '01NOSUCHSESSION0000000000', '%00', '%zz'])}`,
      ),
    'POST /api/v1/chat/turns': () =>
      random() < 0.5
        ? json('POST', '/api/v1/chat/turns', {
            session_id: sessionId,
            turn_id: `fz_${Math.floor(random() * 1e9)}`,
            message: 'hello',
            agent: 'default',
          })
        : json('POST', '/api/v1/chat/turns', {
            session_id: sessionId,
            turn_id: turnId,
            message: 'a different message',
            option: { request_id: requestId, value: 'x' },
          }),
    'GET /api/v1/chat/sessions/{session_id}/events': () => {
      const base = get(
        `/api/v1/chat/sessions/${segment()}/events?${query({ after: queryValue() })}`,
      );
      if (random() < 0.5)
        base.headers['last-event-id'] = pick([
          '0',
          '-1',
          'x',
          '1e3',
          '99999999999999999999',
          '%00',
        ]);
      return base;
    },
    'POST /api/v1/chat/sessions/{session_id}/turns/{turn_id}/cancel': () =>
      json('POST', `/api/v1/chat/sessions/${segment()}/turns/${segment()}/cancel`, {
        command_id: `c_${Math.floor(random() * 1e9)}`,
      }),
    'POST /api/v1/chat/sessions/{session_id}/inputs/{request_id}': () =>
      json('POST', `/api/v1/chat/sessions/${segment()}/inputs/${segment()}`, {
        expected_sequence: expectedSequence,
        approved: random() < 0.5,
        response: { reason: 'fuzz' },
      }),
    'POST /api/v1/admin/sessions/{session_id}/unpark': () =>
      json('POST', `/api/v1/admin/sessions/${segment()}/unpark`, {}),
    'POST /api/v1/admin/prune': () =>
      json('POST', '/api/v1/admin/prune', { older_than_days: 3650 }),
    'GET /api/v1/models': () =>
      get(
        `/api/v1/models?${query({ provider: queryValue(), include_removed: pick(['true', 'false', 'x']) })}`,
      ),
    'POST /api/v1/admin/models/sync': () =>
      json('POST', '/api/v1/admin/models/sync', { provider: 'demo' }),
    'GET /api/v1/usage': () =>
      get(
        `/api/v1/usage?${query({ group_by: pick(['model', 'agent', 'tenant', 'user', 'day', 'x']), from: queryValue(), to: queryValue() })}`,
      ),
    'POST /api/v1/chat/sessions/{session_id}/attachments': () => ({
      method: 'POST',
      path: `/api/v1/chat/sessions/${segment()}/attachments`,
      headers: {
        'content-type': pick(['image/png', 'image/gif', 'text/plain', 'image/svg+xml', '']),
      },
      body: pick(['', 'not an image', '\u0089PNG\r\n\u001a\n', 'GIF89a', 'x'.repeat(3000)]),
    }),
    'GET /api/v1/chat/sessions/{session_id}/attachments/{attachment_id}': () =>
      get(`/api/v1/chat/sessions/${segment()}/attachments/${segment()}`),
    'GET /api/v1/chat/sessions/{session_id}/files': () =>
      get(`/api/v1/chat/sessions/${segment()}/files`),
    'GET /api/v1/memories': () =>
      get(`/api/v1/memories?${query({ user: queryValue(), q: queryValue() })}`),
    'DELETE /api/v1/memories/{memory_id}': () => bare('DELETE', `/api/v1/memories/${segment()}`),
    'GET /api/v1/agents': () => get(`/api/v1/agents?${query({ namespace: queryValue() })}`),
    'GET /api/v1/agents/{name}/tools': () => get(`/api/v1/agents/${segment()}/tools`),
    'GET /api/v1/inputs': () =>
      get(
        `/api/v1/inputs?${query({ state: pick(['pending', 'x', '']), limit: queryValue(), cursor: queryValue() })}`,
      ),
    'GET /api/v1/me': () => get('/api/v1/me'),
    'GET /api/v1/missions': () => get(`/api/v1/missions?${query({ namespace: queryValue() })}`),
    'POST /api/v1/missions/{name}/executions': () =>
      json('POST', `/api/v1/missions/${agentOrMission()}/executions`, {
        execution_id: `fx_${Math.floor(random() * 1e9)}`,
        input: { topic: 'x' },
        agent: 'default',
      }),
    'GET /api/v1/executions': () =>
      get(
        `/api/v1/executions?${query({ mission: queryValue(), status: pick(['success', 'x', '']), user: queryValue(), cursor: queryValue(), limit: queryValue() })}`,
      ),
    'GET /api/v1/executions/{execution_id}': () => get(`/api/v1/executions/${segment()}`),
    'POST /api/v1/executions/{execution_id}/cancel': () =>
      json('POST', `/api/v1/executions/${segment()}/cancel`, {
        command_id: `x_${Math.floor(random() * 1e9)}`,
      }),
    'POST /api/v1/executions/{execution_id}/unblock': () =>
      json('POST', `/api/v1/executions/${segment()}/unblock`, {
        command_id: `x_${Math.floor(random() * 1e9)}`,
        note: 'go on',
      }),
    'GET /api/v1/schedules': () => get('/api/v1/schedules'),
    'PATCH /api/v1/schedules/{name}': () =>
      json('PATCH', `/api/v1/schedules/${pick(['each_second', segment()])}`, {
        enabled: pick([true, false, 'false', null, value()]),
        ...(random() < 0.2 ? { [segment()]: value() } : {}),
      }),
    'GET /api/v1/chat/sessions/{session_id}/checkpoints': () =>
      get(
        `/api/v1/chat/sessions/${segment()}/checkpoints?${query({ limit: queryValue(), cursor: queryValue() })}`,
      ),
    'POST /api/v1/chat/sessions/{session_id}/fork': () =>
      json('POST', `/api/v1/chat/sessions/${segment()}/fork`, {
        at_sequence: checkpoint,
        title: 'fork',
      }),
    'POST /api/v1/chat/sessions/{session_id}/rewind': () =>
      json('POST', `/api/v1/chat/sessions/${segment()}/rewind`, { to_sequence: checkpoint }),
    'POST /api/v1/agents/{name}/personal': () =>
      json('POST', `/api/v1/agents/${segment()}/personal`, {}),
    'POST /api/v1/agents/{name}/personal/archive': () =>
      json('POST', `/api/v1/agents/${segment()}/personal/archive`, {}),
    'GET /api/v1/me/preferences': () => get('/api/v1/me/preferences'),
    'GET /api/v1/voices': () => get('/api/v1/voices'),
    'POST /api/v1/speech': () =>
      json('POST', '/api/v1/speech', {
        text: pick(['Hello.', '', ' ', 'x'.repeat(4001), value()]),
        voice: pick([undefined, 'espeak/en', 'espeak/zz', '', value()]),
        format: pick([undefined, 'wav', 'mp3', value()]),
        ...(random() < 0.2 ? { [segment()]: value() } : {}),
      }),
    'POST /api/v1/transcriptions': () => ({
      method: 'POST',
      path: `/api/v1/transcriptions?${query({ language: pick(['en', 'english', queryValue()]) })}`,
      headers: {
        'content-type': pick(['audio/wav', 'audio/webm', 'text/plain', 'audio/x-unknown', '']),
      },
      body: pick([
        '',
        'not audio',
        'RIFF\u0000\u0000\u0000\u0000WAVEfmt ',
        'OggS',
        'x'.repeat(3000),
      ]),
    }),
    'GET /api/v1/chat/sessions/{session_id}/messages/{message_id}/speech': () =>
      get(
        `/api/v1/chat/sessions/${pick([sessionId, segment()])}/messages/${pick([spokenMessageId, segment()])}/speech`,
      ),
    'GET /api/v1/panels/palette': () => get('/api/v1/panels/palette'),
    'GET /api/v1/photos': () =>
      get(
        `/api/v1/photos?${query({ origin: pick(['upload', 'generated', 'x']), cursor: queryValue(), limit: queryValue() })}`,
      ),
    'POST /api/v1/photos': () =>
      random() < 0.5
        ? json('POST', `/api/v1/photos?${query({ title: queryValue() })}`, {
            attachment_id: pick([attachmentId, segment()]),
            title: 'copy',
          })
        : {
            method: 'POST',
            path: `/api/v1/photos?${query({ title: queryValue() })}`,
            headers: {
              'content-type': pick(['image/png', 'image/gif', 'text/plain', 'image/svg+xml', '']),
            },
            body: pick(['', 'not an image', '\u0089PNG\r\n\u001a\n', 'GIF89a', 'x'.repeat(3000)]),
          },
    'GET /api/v1/photos/{photo_id}': () => get(`/api/v1/photos/${pick([photoId, segment()])}`),
    'GET /api/v1/photos/{photo_id}/content': () =>
      get(`/api/v1/photos/${pick([photoId, segment()])}/content`),
    'PATCH /api/v1/photos/{photo_id}': () =>
      json('PATCH', `/api/v1/photos/${pick([photoId, segment()])}`, { title: 'renamed' }),
    'DELETE /api/v1/photos/{photo_id}': () =>
      bare('DELETE', `/api/v1/photos/${pick([photoId, segment()])}`),
    'GET /api/v1/me/events': () => {
      const base = get('/api/v1/me/events');
      if (random() < 0.7)
        base.headers['last-event-id'] = pick([
          '0',
          'x',
          '-1',
          '1e3',
          '99999999999999999999',
          String(Date.now()),
          segment(),
        ]);
      return base;
    },
    'GET /api/v1/panels': () =>
      get(
        `/api/v1/panels?${query({ scope: pick(['session', 'workspace', 'x']), session_id: pick([sessionId, queryValue()]), cursor: queryValue(), limit: queryValue() })}`,
      ),
    'POST /api/v1/panels': () =>
      json('POST', '/api/v1/panels', {
        title: pick(['Fuzz', '', value()]),
        scope: pick(['session', 'workspace', 'ephemeral', value()]),
        session_id: pick([undefined, sessionId, value()]),
        document: pick([
          { type: 'markdown', text: value() },
          { type: 'stack', children: [{ type: 'table', columns: ['a'], rows: [[value()]] }] },
          { type: value() },
          value(),
        ]),
        ...(random() < 0.2 ? { [segment()]: value() } : {}),
      }),
    'GET /api/v1/panels/{panel_id}': () => get(`/api/v1/panels/${pick([panelId, segment()])}`),
    'PUT /api/v1/panels/{panel_id}': () =>
      json('PUT', `/api/v1/panels/${pick([panelId, segment()])}`, {
        title: pick(['Fuzz', value()]),
        document: pick([{ type: 'progress', value: 1 }, { type: 'progress', value: -1 }, value()]),
      }),
    'DELETE /api/v1/panels/{panel_id}': () =>
      bare('DELETE', `/api/v1/panels/${pick([panelId, segment()])}`),
    'POST /api/v1/panels/{panel_id}/submit': () =>
      json('POST', `/api/v1/panels/${pick([panelId, segment()])}/submit`, {
        turn_id: pick([`x_${Math.floor(random() * 1e9)}`, value()]),
        form: pick(['f', value()]),
        values: pick([{ x: value() }, { x: null }, { y: 1 }, value()]),
      }),
    'PATCH /api/v1/me': () =>
      json('PATCH', '/api/v1/me', {
        display_name: pick([undefined, null, 'Ada', value()]),
        avatar_url: pick([undefined, null, 'https://example.com/a.png', value()]),
        ...(random() < 0.2 ? { [segment()]: value() } : {}),
      }),
    'PUT /api/v1/me/preferences': () =>
      json('PUT', '/api/v1/me/preferences', {
        language: pick([undefined, null, 'de-CH', value()]),
        timezone: pick([undefined, null, 'Europe/Zurich', value()]),
        active_agent: pick([undefined, null, 'default', value()]),
        active_session_id: pick([undefined, null, sessionId, value()]),
        workspace_id: pick([undefined, null, workspaceId, value()]),
        system_voice: pick([undefined, null, 'espeak/en', 'espeak/zz', value()]),
        desktop: pick([undefined, {}, { panes: [value()] }, value()]),
        ...(random() < 0.2 ? { [segment()]: value() } : {}),
      }),
    'GET /api/v1/agents/{name}': () => get(`/api/v1/agents/${agentOrMission()}`),
    'PUT /api/v1/agents/{name}': () =>
      json('PUT', `/api/v1/agents/${agentOrMission()}`, {
        instructions: 'Be brief.',
        namespace: 'fuzz',
      }),
    'DELETE /api/v1/agents/{name}': () => bare('DELETE', `/api/v1/agents/${agentOrMission()}`),
    'GET /api/v1/missions/{name}': () => get(`/api/v1/missions/${agentOrMission()}`),
    'PUT /api/v1/missions/{name}': () =>
      json('PUT', `/api/v1/missions/${agentOrMission()}`, { prompt: 'Do it.', namespace: 'fuzz' }),
    'DELETE /api/v1/missions/{name}': () => bare('DELETE', `/api/v1/missions/${agentOrMission()}`),
    'GET /api/v1/agents/{name}/revisions': () =>
      get(
        `/api/v1/agents/${agentOrMission()}/revisions?${query({ limit: queryValue(), cursor: queryValue() })}`,
      ),
    'GET /api/v1/agents/{name}/revisions/{revision}': () =>
      get(`/api/v1/agents/${agentOrMission()}/revisions/${pick(['1', '2', queryValue()])}`),
    'GET /api/v1/agents/{name}/shipped': () => get(`/api/v1/agents/${agentOrMission()}/shipped`),
    'GET /api/v1/missions/{name}/revisions': () =>
      get(
        `/api/v1/missions/${agentOrMission()}/revisions?${query({ limit: queryValue(), cursor: queryValue() })}`,
      ),
    'GET /api/v1/missions/{name}/revisions/{revision}': () =>
      get(`/api/v1/missions/${agentOrMission()}/revisions/${pick(['1', '2', queryValue()])}`),
    'GET /api/v1/missions/{name}/shipped': () =>
      get(`/api/v1/missions/${agentOrMission()}/shipped`),
    'GET /api/v1/workspaces': () => get('/api/v1/workspaces'),
    'POST /api/v1/workspaces': () =>
      json('POST', '/api/v1/workspaces', {
        name: pick(['Fuzz space', `fuzz ${Math.floor(random() * 1e9)}`, value()]),
        description: pick([undefined, null, 'made by the fuzzer', value()]),
        members: pick([undefined, { roles: ['admin'] }, { users: [value()] }, value()]),
      }),
    'GET /api/v1/workspaces/{workspace_id}': () =>
      get(`/api/v1/workspaces/${pick([workspaceId, segment()])}`),
    'PATCH /api/v1/workspaces/{workspace_id}': () =>
      json('PATCH', `/api/v1/workspaces/${pick([workspaceId, segment()])}`, {
        name: pick(['Fuzz space', 'doomed 0', value()]),
        description: pick([undefined, null, 'renamed by the fuzzer', value()]),
        members: pick([undefined, { roles: ['admin'], users: ['local'] }, value()]),
      }),
    'DELETE /api/v1/workspaces/{workspace_id}': () =>
      bare(
        'DELETE',
        `/api/v1/workspaces/${pick([...doomedWorkspaceIds, 'ws_01NOSUCHWORKSPACE000000000', '%00'])}`,
      ),
    'GET /api/v1/budgets': () => get('/api/v1/budgets'),
    // Limits far above what the fuzzer's turns use: a budget never stops them.
    'PUT /api/v1/budgets/{budget_id}': () =>
      json('PUT', `/api/v1/budgets/${pick(['fuzz', segment()])}`, {
        scope: pick(['tenant', 'agent', 'x']),
        scope_id: pick([null, 'default', value()]),
        metric: pick(['tokens', 'cost_usd', 'x']),
        period: pick(['day', 'month', 'run', 'x']),
        limit: pick([1e10, 1e9, -1, 'x', null]),
      }),
    'DELETE /api/v1/budgets/{budget_id}': () =>
      bare('DELETE', `/api/v1/budgets/${pick(['fuzz', segment()])}`),
    // The OpenAI-compatible API (no worker runs: a blocking request answers after the
    // server's blocking_wait_ms, as it stands).
    'GET /openai/v1/models': () => get('/openai/v1/models'),
    'POST /openai/v1/responses': () =>
      json('POST', '/openai/v1/responses', {
        model: pick(['default', 'parley/other', value()]),
        input: pick(['hello', [{ role: 'user', content: 'hi' }], [], value()]),
        background: pick([true, false]),
        conversation: pick([undefined, sessionId, value()]),
        previous_response_id: pick([undefined, `resp_${turnId}`, value()]),
      }),
    'GET /openai/v1/responses/{response_id}': () =>
      get(
        `/openai/v1/responses/${pick([`resp_${turnId}`, segment()])}?${query({ starting_after: queryValue() })}`,
      ),
    // Never the base turn's response: its deletion would cancel the turn the others use.
    'DELETE /openai/v1/responses/{response_id}': () =>
      bare('DELETE', `/openai/v1/responses/${pick([`resp_${segment()}`, segment()])}`),
    'POST /openai/v1/responses/{response_id}/cancel': () =>
      json('POST', `/openai/v1/responses/${pick([`resp_${turnId}`, segment()])}/cancel`, {}),
    'POST /openai/v1/chat/completions': () =>
      json('POST', '/openai/v1/chat/completions', {
        model: pick(['default', value()]),
        messages: pick([[{ role: 'user', content: 'hi' }], [], [{ role: value() }], value()]),
      }),
    // OpenAI Files over the photo library: a form (GIF89a is a GIF by its bytes), or not.
    'POST /openai/v1/files': () => {
      const part = (name: string, content: string, filename?: string) =>
        `--fuzz\r\nContent-Disposition: form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}\r\n\r\n${content}\r\n`;
      return {
        method: 'POST',
        path: '/openai/v1/files',
        headers: {
          'content-type': pick([
            'multipart/form-data; boundary=fuzz',
            'multipart/form-data; boundary=fuzz',
            'multipart/form-data',
            'application/json',
            '',
          ]),
        },
        body: pick([
          `${part('purpose', pick(['vision', 'user_data', 'fine-tune', '', String(value())]))}${part(
            pick(['file', 'file', 'files', 'expires_after[anchor]']),
            pick(['GIF89a' + 'x'.repeat(20), 'not an image', '', 'x'.repeat(3000)]),
            pick(['a.gif', '', 'x'.repeat(300), String(value()), undefined]),
          )}--fuzz--\r\n`,
          '--fuzz\r\n',
          '',
          '{}',
        ]),
      };
    },
    'GET /openai/v1/files': () =>
      get(
        `/openai/v1/files?${query({ after: pick([photoId, queryValue()]), limit: queryValue(), order: pick(['desc', 'asc', queryValue()]) })}`,
      ),
    'GET /openai/v1/files/{file_id}': () => get(`/openai/v1/files/${pick([photoId, segment()])}`),
    'GET /openai/v1/files/{file_id}/content': () =>
      get(`/openai/v1/files/${pick([photoId, segment()])}/content`),
    'DELETE /openai/v1/files/{file_id}': () =>
      bare('DELETE', `/openai/v1/files/${pick([photoId, segment()])}`),
    // AG-UI: a run whose stream would follow a turn no worker runs is never generated
    // (made-up interrupts, a refused cursor), so every fuzzed request answers.
    'POST /ag-ui/{agent}': () =>
      json(
        'POST',
        `/ag-ui/${pick(['default', segment()])}${pick(['', `?${query({ include: pick([queryValue(), 'reasoning', 'reasoning,x']) })}`])}`,
        {
          threadId: pick([sessionId, 'fuzz-thread', value()]),
          runId: pick(['fuzz_run', value()]),
          messages: pick([
            [{ id: 'm', role: 'user', content: 'hi' }],
            [],
            [{ role: value() }],
            value(),
          ]),
          resume: pick([
            [
              {
                interruptId: pick(['req_fuzz_missing', value()]),
                status: 'resolved',
                payload: value(),
              },
            ],
            [{ interruptId: 'req_fuzz_missing', status: value() }],
            value(),
          ]),
          context: pick([[{ description: 'd', value: value() }], [{ value: value() }], value()]),
          state: pick([undefined, {}, { step: value() }, value()]),
        },
      ),
    'GET /ag-ui/{agent}/threads/{thread_id}/events': () =>
      random() < 0.5
        ? get(`/ag-ui/${pick(['default', segment()])}/threads/${segment()}/events`)
        : get(
            `/ag-ui/${pick(['default', 'other'])}/threads/${pick([sessionId, 'fuzz-thread'])}/events?${query({ after: pick(['x', '-1', '1e3', '99999999999999999999', '999999999']) })}`,
          ),
    // The MCP server: JSON-RPC messages, mostly in the session made before the run (a
    // call's turn is answered as it stands after blocking_wait_ms: no worker runs).
    'POST /mcp': () => {
      const fuzzed = json(
        'POST',
        '/mcp',
        pick([
          {
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: {
              protocolVersion: '2025-11-25',
              capabilities: {},
              clientInfo: { name: 'fuzz', version: '1' },
            },
          },
          { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
          {
            jsonrpc: '2.0',
            id: 3,
            method: 'tools/call',
            params: {
              name: pick(['default', 'other', value()]),
              arguments: {
                message: pick(['hi', value()]),
                ...(random() < 0.5 ? { session_id: pick([sessionId, value()]) } : {}),
              },
              _meta: pick([{}, { 'parley/idempotency_key': pick(['fuzz_mcp', value()]) }]),
              // A task: answered at once (tasks/result of a real one would wait for its end).
              ...(random() < 0.3 ? { task: pick([{}, { ttl: value() }, value()]) } : {}),
            },
          },
          {
            jsonrpc: '2.0',
            id: 4,
            method: pick(['tasks/get', 'tasks/result', 'tasks/cancel']),
            params: pick([{}, { taskId: pick([`mcpt_${'a'.repeat(32)}`, value()]) }]),
          },
          { jsonrpc: '2.0', id: 5, method: 'tasks/list', params: pick([{}, { cursor: value() }]) },
          { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } },
        ]),
      );
      fuzzed.headers.accept = pick(['application/json, text/event-stream', 'text/html']);
      if (random() < 0.8) fuzzed.headers['mcp-session-id'] = pick([mcpSessionId, segment()]);
      return fuzzed;
    },
    'GET /mcp': () => ({ ...get('/mcp'), headers: { 'mcp-session-id': mcpSessionId } }),
    // Never the session of the run: ending it would leave the other entries none.
    'DELETE /mcp': () => {
      const fuzzed = bare('DELETE', '/mcp');
      if (random() < 0.8) fuzzed.headers['mcp-session-id'] = segment();
      return fuzzed;
    },
    // A2A: an agent's card (1.0's, or 0.3's), its endpoint's redirect, and its JSON-RPC
    // methods, 1.0's and 0.3's.
    'GET /a2a/{agent}/.well-known/agent-card.json': () => ({
      ...get(`/a2a/${agentOrMission()}/.well-known/agent-card.json`),
      ...(random() < 0.5 ? { headers: { 'a2a-version': pick(['0.3', '1.0', segment()]) } } : {}),
    }),
    'GET /a2a/{agent}/v0.3/.well-known/agent-card.json': () =>
      get(`/a2a/${agentOrMission()}/v0.3/.well-known/agent-card.json`),
    'GET /a2a/{agent}': () => get(`/a2a/${agentOrMission()}`),
    'POST /a2a/{agent}': () => {
      const fuzzed = json('POST', `/a2a/${agentOrMission()}`, {
        jsonrpc: pick(['2.0', '2.0', value()]),
        id: pick([1, 'x', null, value()]),
        method: pick([
          'SendMessage',
          'GetTask',
          'CancelTask',
          'SubscribeToTask',
          'ListTasks',
          'CreateTaskPushNotificationConfig',
          'GetTaskPushNotificationConfig',
          'ListTaskPushNotificationConfigs',
          'DeleteTaskPushNotificationConfig',
          'message/send',
          'message/stream',
          'tasks/get',
          'tasks/cancel',
          'tasks/resubscribe',
          'tasks/pushNotificationConfig/set',
          'tasks/pushNotificationConfig/get',
          'tasks/pushNotificationConfig/list',
          'tasks/pushNotificationConfig/delete',
          'agent/getAuthenticatedExtendedCard',
          value(),
        ]),
        params: pick([
          { id: pick([turnId, value()]) },
          {
            taskId: pick([turnId, value()]),
            id: pick([undefined, 'c1', value()]),
            url: pick(['https://push.invalid/hook', 'http://127.0.0.1/x', value()]),
            token: pick([undefined, 't', value()]),
          },
          {
            message: {
              messageId: pick(['m1', value()]),
              parts: pick([[{ text: 'hello' }], [], [{ url: 'x' }], value()]),
              contextId: pick([undefined, sessionId, value()]),
            },
            configuration: { returnImmediately: pick([true, value()]) },
          },
          // 0.3's shapes: kinds on the message and its parts, the push config nested.
          {
            message: {
              kind: pick(['message', value()]),
              messageId: pick(['m1', value()]),
              role: pick(['user', 'agent', value()]),
              parts: pick([
                [{ kind: 'text', text: 'hello' }],
                [{ kind: 'data', data: pick([{ approved: true }, value()]) }],
                [{ kind: 'file', file: pick([{ uri: 'x' }, { bytes: 'aGk=' }, value()]) }],
                [{ kind: value(), text: 'x' }],
                value(),
              ]),
              contextId: pick([undefined, sessionId, value()]),
              taskId: pick([undefined, turnId, value()]),
            },
            configuration: pick([
              { blocking: pick([true, false, value()]) },
              { pushNotificationConfig: pick([{ url: 'https://push.invalid/hook' }, value()]) },
            ]),
          },
          {
            id: pick([turnId, value()]),
            taskId: pick([turnId, value()]),
            pushNotificationConfigId: pick([undefined, 'c1', value()]),
            pushNotificationConfig: pick([
              { url: 'https://push.invalid/hook', authentication: { schemes: ['Bearer'] } },
              value(),
            ]),
          },
          value(),
        ]),
      });
      if (random() < 0.3) fuzzed.headers['a2a-version'] = pick(['0.3', '1.0', segment()]);
      return fuzzed;
    },
    // The platforms' endpoints: Telegram configured (a valid secret 70 % of the time), the
    // others not (404).
    'POST /adapters/telegram/webhook': () => ({
      ...json('POST', '/adapters/telegram/webhook', {
        update_id: Math.floor(random() * 1e9),
        message: {
          message_id: Math.floor(random() * 1e6),
          date: 1,
          chat: { id: 42, type: 'private' },
          from: { id: 42, is_bot: false, first_name: 'Fuzz' },
          text: 'hello',
        },
      }),
      headers: {
        'content-type': 'application/json',
        ...(random() < 0.7 ? { 'x-telegram-bot-api-secret-token': telegramSecret } : {}),
      },
    }),
    'POST /adapters/slack/events': () => platformEvent('/adapters/slack/events'),
    'POST /adapters/discord/interactions': () => platformEvent('/adapters/discord/interactions'),
    'POST /adapters/gchat/events': () => platformEvent('/adapters/gchat/events'),
    'POST /adapters/teams/messages': () => platformEvent('/adapters/teams/messages'),
    'GET /api/v1/admin/webhooks': () =>
      get(`/api/v1/admin/webhooks?${query({ dead_limit: queryValue() })}`),
    'GET /healthz': () => get('/healthz'),
    'GET /readyz': () => get('/readyz'),
    'GET /metrics': () => get('/metrics'),
    'GET /api/v1/openapi.json': () => get('/api/v1/openapi.json'),
    // The web app: its index, its files, client-side routes, and API paths it must refuse.
    'GET /': () => get(`/?${query({ s: queryValue() })}`),
    'GET /*': () =>
      get(
        pick([
          '/api/v1/nothing',
          `/s/${segment()}`,
          '/inbox',
          `/assets/${segment()}.js`,
          `/${segment()}`,
          '/..%2F..%2Fetc%2Fpasswd',
          '/metricsx',
        ]),
      ),
  };
  /** Requests that match no route at all (an unknown method or path). */
  const strays: (() => FuzzRequest)[] = [
    () => platformEvent(`/adapters/${segment()}/events`),
    () => json(pick(['PATCH', 'PUT', 'DELETE']), `/api/v1/chat/sessions/${segment()}`, {}),
    () => bare(pick(['OPTIONS', 'TRACE', 'PROPFIND']), `/api/v1/${segment()}`),
  ];
  const entries = [
    ...Object.entries(routes),
    ...strays.map((make) => ['(no route)', make] as const),
  ];

  function query(params: Record<string, string>): string {
    return Object.entries(params)
      .filter(() => random() < 0.8)
      .map(([key, item]) => `${key}=${item}`)
      .join('&');
  }
  function get(path: string): FuzzRequest {
    return { method: 'GET', path, headers: {}, body: null };
  }
  function json(method: string, path: string, body: Record<string, unknown>): FuzzRequest {
    return { method, path, headers: { 'content-type': 'application/json' }, body: mutate(body) };
  }
  function mutate(body: Record<string, unknown>): string {
    const roll = random();
    if (roll < 0.06)
      return pick([
        '',
        '{',
        'null',
        '[]',
        '"text"',
        '{"a":',
        '\u0000',
        '{"__proto__":{"x":1}}',
        '{"constructor":{"prototype":{"x":1}}}',
      ]);
    const copy: Record<string, unknown> = { ...body };
    const mutations = 1 + Math.floor(random() * 3);
    for (let index = 0; index < mutations; index++) {
      const keys = Object.keys(copy);
      const what = random();
      if (what < 0.6 && keys.length > 0) copy[pick(keys)] = value();
      else if (what < 0.75 && keys.length > 0) delete copy[pick(keys)];
      else copy[pick(['extra', 'attachments', 'turn_ids', 'response', 'option'])] = value();
    }
    return JSON.stringify(copy);
  }

  // Every entry once first, in order, so that any number of requests covers every route.
  let sent = 0;
  let firstPass = true;
  const next = (): { route: string; fuzzed: FuzzRequest } => {
    firstPass = sent < entries.length;
    const [route, make] = entries[sent] ?? pick(entries);
    sent += 1;
    const fuzzed = make();
    // An entry that sent another method than its key says would cover the wrong route.
    if (route !== '(no route)' && !route.startsWith(`${fuzzed.method} `)) {
      throw new Error(`the fuzzer's entry ${route} sent ${fuzzed.method}`);
    }
    const roll = random();
    if (roll < 0.04) fuzzed.headers['parley-protocol-version'] = pick(['2', '0', '', 'x', '1.0']);
    else if (roll < 0.08 && fuzzed.body !== null)
      fuzzed.headers['content-type'] = pick([
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/json; charset=latin1',
        'image/png',
      ]);
    else if (roll < 0.1 && fuzzed.body !== null) delete fuzzed.headers['content-type'];
    return { route, fuzzed };
  };
  return { next, routes: Object.keys(routes) };
}

/** Percent-encodes like a client would; a lone surrogate has no UTF-8 form, so raw bytes. */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return '%ed%a0%80';
  }
}

function send(fuzzed: FuzzRequest): Promise<RawResponse> {
  const headers = Object.entries({
    host: '127.0.0.1',
    connection: 'close',
    ...fuzzed.headers,
    ...(fuzzed.body === null ? {} : { 'content-length': String(Buffer.byteLength(fuzzed.body)) }),
  }).map(([name, value]) => `${name}: ${value}\r\n`);
  return rawRequest(
    server.url,
    Buffer.concat([
      Buffer.from(`${fuzzed.method} ${fuzzed.path} HTTP/1.1\r\n${headers.join('')}\r\n`, 'latin1'),
      Buffer.from(fuzzed.body ?? '', 'utf8'),
    ]),
  );
}

function appRoutes() {
  if (!server.app) throw new Error('the fuzzed process has no API');
  return registeredRoutes(server.app);
}

describe(`fuzzing every route (seed ${seed})`, () => {
  it('has an entry for every route the app registers', () => {
    const covered = new Set(generator(prng(seed)).routes.map((route) => routeShape(route)));
    const missing = appRoutes()
      .map((route) => `${route.method} ${routeShape(route.url)}`)
      .filter((route) => !covered.has(route));
    expect(missing, "routes without an entry in the fuzzer's `routes`").toEqual([]);
  });

  it('fingerprints every table of the schema but the migrations', async () => {
    const tables = await fingerprintedTables(server.db);
    expect(tables).toEqual(
      expect.arrayContaining(['sessions', 'events', 'webhook_deliveries', 'chat_state_locks']),
    );
    expect(tables).not.toContain('parley_migrations');
    expect(Object.keys(await fingerprint(server.db)).sort()).toEqual([...tables].sort());
    // What lets the fuzzer skip a hash: reading leaves the next transaction id alone, a
    // write (even one rolled back) moves it. (A PostgreSQL cluster is shared with the other
    // test files, whose writes move it too: there only the second half holds.)
    const start = await nextTransactionId(server.db);
    await fingerprint(server.db, tables);
    if (engine === 'pglite') expect(await nextTransactionId(server.db)).toBe(start);
    await server.db
      .transaction(async (tx) => {
        await tx.query(`update sessions set title = title where false`);
        await tx.query(`insert into parley_migrations (id, name) values (-1, 'rolled back')`);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect(await nextTransactionId(server.db)).not.toBe(start);
  });

  // Before the fuzzing: its accepted requests may empty tables (a prune, a delete).
  it('sees a change of any single column of any table', async () => {
    const outcome = await blindColumns(server.db);
    expect(outcome.unknownTypes, 'columns of a type the check cannot change').toEqual([]);
    expect(outcome.blind, 'columns whose change the fingerprint missed').toEqual([]);
    expect(outcome.checked.sort()).toEqual((await fingerprintedTables(server.db)).sort());
    // Most tables were checked on rows of real use, not made-up ones.
    expect(outcome.madeUp.length, outcome.madeUp.join(', ')).toBeLessThan(6);
  }, 300_000);

  it(`answers ${total} hostile requests without a 5xx, and rejected ones write nothing`, async () => {
    const { next } = generator(prng(seed));
    const statuses = new Map<number, number>();
    const codes = new Set<string>();
    // The tables are those of the schema, which requests never change: listed once.
    const tables = await fingerprintedTables(server.db);
    let assigned = await nextTransactionId(server.db);
    let before = await fingerprint(server.db, tables);
    let hashed = 0;
    for (let index = 0; index < total; index++) {
      const { fuzzed } = next();
      const where = `seed ${seed}, request ${index}: ${fuzzed.method} ${fuzzed.path} ${fuzzed.body?.slice(0, 200) ?? ''}`;
      const response = await send(fuzzed);
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      expect(response.status, where).toBeGreaterThanOrEqual(200);
      // A valid blocking Chat Completion on this worker-less server answers 504
      // turn_pending by design (its turn was admitted and goes on); every other 5xx is a fault.
      const pending =
        fuzzed.path === '/openai/v1/chat/completions' &&
        response.status === 504 &&
        response.body.includes('"code":"turn_pending"');
      if (!pending) {
        expect(response.status, `${where} → ${response.body.slice(0, 300)}`).toBeLessThan(500);
      }
      if (response.status >= 400) {
        const parsed = JSON.parse(response.body) as {
          error?: unknown;
          message?: unknown;
          jsonrpc?: unknown;
        };
        // The OpenAI-compatible routes answer in OpenAI's shape, with Parley's codes; the
        // MCP server JSON-RPC errors with numeric codes; A2A's endpoint JSON-RPC errors with
        // A2A's numeric code and Parley's code as the ErrorInfo reason (what fails before
        // any route, a malformed request line say, stays in Parley's shape).
        const nested =
          typeof parsed.error === 'object' && parsed.error !== null
            ? (parsed.error as { code?: unknown; message?: unknown; data?: { reason?: unknown }[] })
            : null;
        let body: { code?: unknown; message?: unknown } = {
          code: parsed.error,
          message: parsed.message,
        };
        if (nested && fuzzed.path.startsWith('/a2a/') && parsed.jsonrpc === '2.0') {
          expect(typeof nested.code, where).toBe('number');
          body = { code: nested.data?.[0]?.reason, message: nested.message };
        } else if (nested && fuzzed.path.startsWith('/mcp')) {
          expect(typeof nested.code, where).toBe('number');
          body = { code: String(nested.code), message: nested.message };
        } else if (nested && fuzzed.path.startsWith('/openai/')) {
          body = nested;
        }
        expect(typeof body.code, where).toBe('string');
        expect(typeof body.message, where).toBe('string');
        codes.add(String(body.code));
      }
      // No transaction id was assigned since the last hash: nothing was written, `before`
      // still holds. Otherwise hash again (a refusal that began to write and rolled back
      // moves the id too, and must hash the same).
      const current = await nextTransactionId(server.db);
      if (current === assigned) continue;
      assigned = current;
      const after = await fingerprint(server.db, tables);
      hashed++;
      if ((response.status >= 400 && !pending) || fuzzed.method === 'GET') {
        expect(changedTables(before, after), `${where} (${response.status}) wrote to`).toEqual([]);
      }
      before = after;
    }

    // The check ran: requests that wrote, or began to, were followed by a hash.
    expect(hashed).toBeGreaterThan(0);
    // The mix exercised both sides: accepted requests and many kinds of refusal.
    expect([...statuses.keys()].filter((status) => status < 300).length).toBeGreaterThan(0);
    expect(codes.size, [...codes].join(', ')).toBeGreaterThan(8);
    // Every route was reached (the process's own count of requests per route).
    const reached = await reachedRoutes();
    const missed = appRoutes().filter(
      (route) => (reached.get(route.url) ?? 0) <= (reachedBefore.get(route.url) ?? 0),
    );
    expect(missed, 'routes no fuzzed request reached').toEqual([]);
  }, 600_000);
});
