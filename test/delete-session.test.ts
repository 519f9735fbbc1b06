import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteSession } from '../src/store/deleteSession.js';
import { workspaceDir } from '../src/tools/shell/workspace.js';
import { until } from './support/poll.js';
import { FakeTelegram, telegramMessageUpdate } from './support/platforms/telegram.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

// DELETE /api/v1/chat/sessions/{id}: the session's text leaves every table (usage rows, no
// text, stay), in one transaction; a retry is 404.
const botToken = '424242:telegram-token-of-the-delete-test';
const secretToken = 'telegram-secret-of-the-delete-test';
const keys = { K_ADA: 'ada-key-91d3', K_ALICE: 'alice-key-2c7e', K_BOB: 'bob-key-6a10' };
const admin = { authorization: `Bearer ${keys.K_ADA}` };
const alice = { authorization: `Bearer ${keys.K_ALICE}` };
const bob = { authorization: `Bearer ${keys.K_BOB}` };
const marker = 'zebra4821';
let telegram: FakeTelegram;
let server: TestServer;
let update = 5000;

beforeAll(async () => {
  telegram = await FakeTelegram.start(botToken);
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ADA', tenant: 'acme', user: 'ada', roles: ['admin'] },
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice' },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob' },
        ],
      },
      agents: { default: { tools: { remember: 'allow', calculator: 'approve' } } },
      adapters: {
        telegram: {
          tenant: 'acme',
          bot_token_env: 'TG_BOT_TOKEN',
          secret_token_env: 'TG_SECRET',
          api_url: telegram.server.url,
          users: { '42': { user: 'tina', roles: [] } },
          edit_interval_ms: 20,
          retry_base_ms: 50,
        },
      },
      // Nobody listens there: its deliveries stay in the outbox, with the events' text.
      webhooks: {
        crm: {
          url: 'http://127.0.0.1:9/hooks',
          events: ['message', 'done'],
          secret_env: 'CRM_SECRET',
          tenants: '*',
          retry_base_ms: 60_000,
        },
      },
      retention: { delete_memories: true },
      missions: {
        waits: { agent: 'default', prompt: '/tool calculator {"expression": "1+1"}' },
        quick: { agent: 'default', prompt: 'a quick job' },
      },
    },
    {
      ...keys,
      TG_BOT_TOKEN: botToken,
      TG_SECRET: secretToken,
      CRM_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    },
  );
});
afterAll(async () => {
  await server?.close();
  await telegram?.close();
});

async function telegramMessage(chatId: number, text: string): Promise<void> {
  const n = update++;
  const response = await fetch(`${server.url}/adapters/telegram/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secretToken },
    body: telegramMessageUpdate({ updateId: n, chatId, messageId: n, userId: 42, text }),
  });
  expect(response.status).toBe(200);
}

const api = (method: string, path: string, body?: unknown, who = admin) =>
  request(server.url, method, path, body, who);

async function idle(sessionId: string) {
  return until(
    () => api('GET', `/api/v1/chat/sessions/${sessionId}`),
    (found) => found.body.state === 'idle' || found.body.state === 'input_required',
    'the session to settle',
  );
}

/** Every table of the schema and, for each, how many rows mention `text` anywhere. */
async function rowsMentioning(text: string): Promise<Record<string, number>> {
  const tables = await server.db.query<{ table_name: string }>(
    `select table_name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE'
      order by table_name`,
  );
  const counts: Record<string, number> = {};
  for (const { table_name: table } of tables.rows) {
    const found = await server.db.query<{ n: number }>(
      `select count(*)::int as n from "${table}" t where t::text like '%' || $1 || '%'`,
      [text],
    );
    counts[table] = found.rows[0]?.n ?? 0;
  }
  return counts;
}

const tinyPng = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

describe('deleting a session', () => {
  it('removes its text from every table, ends its streams, and answers a retry 404', async () => {
    await telegramMessage(7001, `/tool remember {"text": "${marker} likes tea"}`);
    await until(
      () => telegram.inChat('7001'),
      (found) => found.length > 0,
      'the reply in Telegram',
    );
    const sessionId = (
      await until(
        () =>
          server.db.query<{ session_id: string }>(
            `select session_id from adapter_threads where thread_id like '%7001%'`,
          ),
        (found) => found.rows.length === 1,
        'the thread binding',
      )
    ).rows[0]!.session_id;
    await idle(sessionId);
    await telegramMessage(7001, `/options ${marker}-a|${marker}-b`);
    await until(
      () => telegram.inChat('7001'),
      (found) => found.some((reply) => reply.reply_markup?.inline_keyboard),
      'the options',
    );
    await idle(sessionId);
    // The platform made it: tina (a Telegram user) owns it; the admin manages it.
    const session = await api('GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(session.body).toMatchObject({ owner: 'tina', visibility: 'tenant' });

    const uploaded = await fetch(`${server.url}/api/v1/chat/sessions/${sessionId}/attachments`, {
      method: 'POST',
      headers: { 'content-type': 'image/png', ...admin },
      body: tinyPng,
    });
    expect(uploaded.status).toBe(201);
    const asked = await api('POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: 'delete_approval',
      message: '/tool calculator {"expression": "4821 + 1"}',
    });
    expect(asked.status).toBe(202);
    const waiting = await idle(sessionId);
    const pending = waiting.body.pending_input;
    expect(
      (
        await api('POST', `/api/v1/chat/sessions/${sessionId}/inputs/${pending.request_id}`, {
          expected_sequence: pending.expected_sequence,
          approved: true,
        })
      ).status,
    ).toBe(200);
    await until(
      () => api('GET', `/api/v1/chat/sessions/${sessionId}`),
      (found) => found.body.state === 'idle' && found.body.queued_turns === 0,
      'the approved turn',
    );
    const cancelled = await api(
      'POST',
      `/api/v1/chat/sessions/${sessionId}/turns/delete_approval/cancel`,
      { command_id: 'delete_cancel' },
    );
    expect(cancelled.body.result).toBe('too_late');
    const checkpoints = await api('GET', `/api/v1/chat/sessions/${sessionId}/checkpoints`);
    const first = checkpoints.body.items[0].sequence;
    expect(
      (await api('POST', `/api/v1/chat/sessions/${sessionId}/rewind`, { to_sequence: first }))
        .status,
    ).toBe(200);
    await until(
      () => server.db.query('select 1 from webhook_deliveries where session_id = $1', [sessionId]),
      (found) => found.rowCount > 0,
      'the webhook deliveries',
    );

    // Before: the text and the id are spread over many tables (the probe sees them).
    const before = await rowsMentioning(marker);
    for (const table of [
      'messages',
      'events',
      'chat_state_lists',
      'memories',
      'adapter_replies',
      'webhook_deliveries',
      'option_offers',
    ]) {
      expect(before[table], table).toBeGreaterThan(0);
    }
    const withId = await rowsMentioning(sessionId);
    for (const table of [
      'sessions',
      'events',
      'turns',
      'commands',
      'input_requests',
      'attachments',
      'rewinds',
      'adapter_threads',
      'webhook_streams',
      'usage',
    ]) {
      expect(withId[table], table).toBeGreaterThan(0);
    }

    const stream = await SseClient.open(server.url, sessionId, { headers: admin });
    expect(stream.status).toBe(200);
    // Bob may see it (tenant-visible) but not delete it; nothing changes.
    const refused = await api('DELETE', `/api/v1/chat/sessions/${sessionId}`, undefined, bob);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');

    const deleted = await fetch(`${server.url}/api/v1/chat/sessions/${sessionId}`, {
      method: 'DELETE',
      headers: admin,
    });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe('');
    await until(
      () => stream.closed,
      (closed) => closed,
      'the end of the stream',
    );

    const after = await rowsMentioning(marker);
    expect(Object.entries(after).filter(([, n]) => n > 0)).toEqual([]);
    const idAfter = await rowsMentioning(sessionId);
    // Usage rows stay: accounting, without text.
    expect(Object.entries(idAfter).filter(([, n]) => n > 0)).toEqual([['usage', withId.usage]]);

    const retried = await api('DELETE', `/api/v1/chat/sessions/${sessionId}`);
    const absent = await api('DELETE', '/api/v1/chat/sessions/01MISSINGSESSION0000000000');
    expect(retried.status).toBe(404);
    expect(retried.body).toEqual(absent.body);
    expect((await api('GET', `/api/v1/chat/sessions/${sessionId}`)).status).toBe(404);

    // The chat goes on in a new session of its own.
    await telegramMessage(7001, 'hello again');
    const rebound = await until(
      () =>
        server.db.query<{ session_id: string }>(
          `select session_id from adapter_threads where thread_id like '%7001%'`,
        ),
      (found) => found.rows.length === 1,
      'the new binding',
    );
    expect(rebound.rows[0]?.session_id).not.toBe(sessionId);
  });

  it("lets a session's owner delete it, with its personal-session link and its files", async () => {
    const personal = await api('POST', '/api/v1/agents/default/personal', undefined, alice);
    expect(personal.status).toBe(201);
    const sessionId = personal.body.session_id as string;
    expect(
      (
        await api(
          'POST',
          '/api/v1/chat/turns',
          { session_id: sessionId, turn_id: 'personal_marker', message: `${marker} private` },
          alice,
        )
      ).status,
    ).toBe(202);
    await idle(sessionId);
    // What a shell command would have left in the session's working directory.
    const workspace = workspaceDir(server.config.tools.workspaceDir, 'acme', sessionId);
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, 'notes.txt'), `${marker} on disk`);
    const deleted = await api('DELETE', `/api/v1/chat/sessions/${sessionId}`, undefined, alice);
    expect(deleted.status).toBe(204);
    expect(existsSync(workspace)).toBe(false);
    expect(
      (await server.db.query('select 1 from personal_sessions where session_id = $1', [sessionId]))
        .rowCount,
    ).toBe(0);
    expect(
      (await server.db.query('select 1 from messages where session_id = $1', [sessionId])).rowCount,
    ).toBe(0);
    const fresh = await api('POST', '/api/v1/agents/default/personal', undefined, alice);
    expect(fresh.status).toBe(201);
    expect(fresh.body.session_id).not.toBe(sessionId);
  });

  it('refuses while an execution still works in the session, and takes an ended one with it', async () => {
    const waiting = await api('POST', '/api/v1/missions/waits/executions', {
      execution_id: 'waits_1',
    });
    expect(waiting.status).toBe(202);
    const busySession = waiting.body.session_id as string;
    await until(
      () => api('GET', `/api/v1/chat/sessions/${busySession}`),
      (found) => found.body.pending_input !== null,
      "the execution's approval request",
    );
    const refused = await api('DELETE', `/api/v1/chat/sessions/${busySession}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('session_busy');
    expect((await api('GET', `/api/v1/chat/sessions/${busySession}`)).status).toBe(200);

    const quick = await api('POST', '/api/v1/missions/quick/executions', {
      execution_id: 'quick_1',
    });
    await until(
      () => api('GET', '/api/v1/executions/quick_1'),
      (found) => found.body.status === 'success',
      'the quick execution',
    );
    expect((await api('DELETE', `/api/v1/chat/sessions/${quick.body.session_id}`)).status).toBe(
      204,
    );
    expect((await api('GET', '/api/v1/executions/quick_1')).status).toBe(404);
    expect(
      (await server.db.query('select 1 from executions where execution_id = $1', ['quick_1']))
        .rowCount,
    ).toBe(0);
  });

  it('keeps the memories a session created unless retention.delete_memories says otherwise', async () => {
    const admitted = await api(
      'POST',
      '/api/v1/chat/turns',
      { turn_id: 'keep_memory', message: '/tool remember {"text": "keeps-this-memory"}' },
      alice,
    );
    await idle(admitted.body.session_id);
    await until(
      () =>
        server.db.query('select 1 from memories where session_id = $1', [admitted.body.session_id]),
      (found) => found.rowCount === 1,
      'the memory',
    );
    // The store operation as a deployment with the default (false) runs it.
    expect(
      await deleteSession(server.db, {
        tenant: 'acme',
        sessionId: admitted.body.session_id,
        deleteMemories: false,
      }),
    ).toBe(true);
    const kept = await server.db.query<{ text: string }>(
      'select text from memories where session_id = $1',
      [admitted.body.session_id],
    );
    expect(kept.rows).toEqual([{ text: 'keeps-this-memory' }]);
    expect(
      (
        await server.db.query('select 1 from sessions where session_id = $1', [
          admitted.body.session_id,
        ])
      ).rowCount,
    ).toBe(0);
  });
});
