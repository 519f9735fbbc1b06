import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ParleyChatState } from '../src/adapters/state.js';
import { createLogger } from '../src/log.js';
import { prune, retainedTables } from '../src/retention/prune.js';
import { recordFire } from '../src/store/recordFire.js';
import { sessionTables } from '../src/store/pruneSessions.js';
import { FakeTelegram, telegramMessageUpdate } from './support/platforms/telegram.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Retention removes what its keys say, table by table (docs/retention.md): rows are made
// through the real write paths (turns, approvals, options, attachments, cancels, rewinds,
// memories, personal sessions, a Telegram thread, webhook deliveries, executions, the Chat
// SDK's state), aged by moving their timestamps back two days, then pruned with a cut-off
// of one day. The test checks the per-table report against what was in the database,
// what went, what stayed because something still needs it, and that the work ran in
// several small batches.

const botToken = '123456:retention-telegram-token';
const secretToken = 'retention-telegram-secret';
const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`;

/** Accepts every delivery, or (failing) answers 503 to every one. */
async function receiver(failing: boolean): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(failing ? 503 : 204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` };
}

let server: TestServer;
let telegram: FakeTelegram;
let accepting: { url: string; server: Server };
let failing: { url: string; server: Server };

beforeAll(async () => {
  telegram = await FakeTelegram.start(botToken);
  accepting = await receiver(false);
  failing = await receiver(true);
  server = await startTestServer(
    {
      agents: { default: { tools: { calculator: 'approve', remember: 'allow' } } },
      missions: {
        report: { prompt: 'Write the report.' },
        watch: { prompt: 'Watch the feed.', loop_prompt: '/decide blocked' },
      },
      schedules: { nightly: { mission: 'report', cron: '0 3 1 1 *' } },
      webhooks: {
        // Delivered at once.
        crm: { url: accepting.url, events: ['done'], secret_env: 'RET_SECRET', tenants: '*' },
        // Retried for a long time: its deliveries stay pending.
        stuck: {
          url: failing.url,
          events: ['error'],
          secret_env: 'RET_SECRET',
          tenants: '*',
          retry_base_ms: 3_600_000,
          max_attempts: 100,
        },
        // Given up after one attempt: dead letters.
        gone: {
          url: failing.url,
          events: ['turn_started'],
          secret_env: 'RET_SECRET',
          tenants: '*',
          max_attempts: 1,
        },
      },
      adapters: {
        telegram: {
          tenant: 'default',
          bot_token_env: 'RET_TG_TOKEN',
          secret_token_env: 'RET_TG_SECRET',
          api_url: telegram.server.url,
          edit_interval_ms: 20,
          retry_base_ms: 50,
        },
      },
    },
    { RET_SECRET: webhookSecret, RET_TG_TOKEN: botToken, RET_TG_SECRET: secretToken },
  );
});
afterAll(async () => {
  await server?.close();
  await telegram?.close();
  for (const receiving of [accepting, failing]) {
    receiving?.server.closeAllConnections();
    await new Promise((resolve) => receiving?.server.close(resolve));
  }
});

const count = async (sql: string, params: unknown[] = []) =>
  Number((await server.db.query<{ n: number }>(sql, params)).rows[0]?.n);

let turns = 0;
async function turn(sessionId: string | null, message: string): Promise<string> {
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
    ...(sessionId === null ? {} : { session_id: sessionId }),
    turn_id: `ret_${turns++}`,
    message,
  });
  expect(admitted.status).toBe(202);
  return admitted.body.session_id;
}

async function settled(sessionId: string, state = 'idle'): Promise<void> {
  await until(
    async () => (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body,
    (session) => session.state === state && (state !== 'idle' || session.current_turn === null),
    `session ${sessionId} to be ${state}`,
  );
}

async function execution(mission: string, id: string, status: string): Promise<string> {
  const dispatched = await request(server.url, 'POST', `/api/v1/missions/${mission}/executions`, {
    execution_id: id,
  });
  expect(dispatched.status).toBe(202);
  await until(
    async () => (await request(server.url, 'GET', `/api/v1/executions/${id}`)).body,
    (body) => body.status === status,
    `execution ${id} to be ${status}`,
  );
  return dispatched.body.session_id;
}

async function telegramThread(chatId: number, text: string): Promise<string> {
  const sent = await fetch(`${server.url}/adapters/telegram/webhook`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-telegram-bot-api-secret-token': secretToken,
    },
    body: telegramMessageUpdate({ updateId: chatId, chatId, messageId: 1, userId: chatId, text }),
  });
  expect(sent.status).toBe(200);
  await until(
    async () =>
      (
        await server.db.query<{ session_id: string; pending: number }>(
          `select t.session_id,
                  (select count(*) from adapter_replies r
                    where r.session_id = t.session_id and not (r.final and r.state = 'delivered'))
                    as pending
             from adapter_threads t join sessions s on s.session_id = t.session_id
            where t.thread_id like $1 and t.followed_sequence = s.last_sequence
              and s.state = 'idle'`,
          [`%${chatId}%`],
        )
      ).rows[0],
    (row) =>
      row !== undefined && Number(row.pending) === 0 && telegram.inChat(String(chatId)).length > 0,
    `the Telegram reply in chat ${chatId}`,
  );
  return (
    await server.db.query<{ session_id: string }>(
      'select session_id from adapter_threads where thread_id like $1',
      [`%${chatId}%`],
    )
  ).rows[0]?.session_id as string;
}

/** Every delivery of every configured endpoint enqueued, and none of them in flight. */
async function webhooksQuiet(): Promise<void> {
  await until(
    async () =>
      count(
        `select count(*) as n from sessions s, webhook_endpoints w
          where s.last_sequence > coalesce((select followed_sequence from webhook_streams ws
                                             where ws.webhook = w.webhook
                                               and ws.session_id = s.session_id), 0)
             or exists (select 1 from webhook_deliveries d
                         where d.webhook <> 'stuck' and d.state = 'pending')
             or exists (select 1 from webhook_deliveries d
                         where d.webhook = 'stuck' and d.attempts = 0)`,
      ),
    (behind) => behind === 0,
    'every webhook delivery enqueued and attempted',
  );
}

/** Moves a session's rows two days back (what "old" means below: a cut-off of one day). */
async function age(sessionId: string): Promise<void> {
  const statements = [
    `update sessions set updated_at = now() - interval '2 days' where session_id = $1`,
    `update events set at = at - interval '2 days' where session_id = $1`,
    `update sessions set journal_since = journal_since - interval '2 days' where session_id = $1`,
    `update webhook_deliveries set created_at = created_at - interval '2 days' where session_id = $1`,
    `update adapter_replies set updated_at = updated_at - interval '2 days' where session_id = $1`,
    `update usage set at = at - interval '2 days' where session_id = $1`,
  ];
  for (const statement of statements) await server.db.query(statement, [sessionId]);
}

/** Rows per table that hang off these sessions (what deleting them must remove). */
async function rowsOf(sessionIds: string[]): Promise<Record<string, number>> {
  const rows: Record<string, number> = {};
  for (const table of sessionTables) {
    rows[table] =
      table === 'execution_commands'
        ? await count(
            `select count(*) as n from execution_commands c join executions x
                on x.tenant = c.tenant and x.execution_id = c.execution_id
              where x.session_id = any($1::text[])`,
            [sessionIds],
          )
        : await count(`select count(*) as n from ${table} where session_id = any($1::text[])`, [
            sessionIds,
          ]);
  }
  return rows;
}

const zeroReport = () =>
  Object.fromEntries(retainedTables.map((table) => [table, 0])) as Record<string, number>;

describe('retention', () => {
  it('removes, table by table, what the rules say and nothing that is still needed', async () => {
    // --- Sessions that nothing needs any more: they go whole. ---
    // A plain conversation with an image, an option offer and a cancel that came too late.
    const plain = await turn(null, 'hello there');
    await settled(plain);
    const png = Buffer.concat([
      Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
      Buffer.alloc(40, 7),
    ]);
    const uploaded = await fetch(`${server.url}/api/v1/chat/sessions/${plain}/attachments`, {
      method: 'POST',
      headers: { 'content-type': 'image/png' },
      body: png,
    });
    expect(uploaded.status).toBe(201);
    await turn(plain, '/options tea|coffee');
    await settled(plain);
    const cancelled = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${plain}/turns/ret_0/cancel`,
      { command_id: 'ret_cancel' },
    );
    expect(cancelled.body.result).toBe('too_late');
    // An approval asked and answered.
    const approved = await turn(null, '/tool calculator {"expression": "2+3"}');
    await settled(approved, 'input_required');
    const asked = (await request(server.url, 'GET', `/api/v1/chat/sessions/${approved}`)).body
      .pending_input;
    const answered = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${approved}/inputs/${asked.request_id}`,
      { expected_sequence: asked.expected_sequence, approved: true },
    );
    expect(answered.status).toBe(200);
    await settled(approved);
    // A personal session with a memory, rewound to its first checkpoint.
    const personal = await request(server.url, 'POST', '/api/v1/agents/default/personal', {});
    expect(personal.status).toBe(201);
    const mine: string = personal.body.session_id;
    await turn(mine, 'first');
    await settled(mine);
    await turn(mine, '/tool remember {"text": "likes green tea"}');
    await settled(mine);
    const checkpoint = (
      await request(server.url, 'GET', `/api/v1/chat/sessions/${mine}/checkpoints`)
    ).body.items[0];
    const rewound = await request(server.url, 'POST', `/api/v1/chat/sessions/${mine}/rewind`, {
      to_sequence: checkpoint.sequence,
    });
    expect(rewound.status).toBe(200);
    // A Telegram thread whose reply was delivered.
    const thread = await telegramThread(5101, 'hello from telegram');
    // An execution that succeeded, and a cancel that came after its end.
    const finished = await execution('report', 'ret_done', 'success');
    const late = await request(server.url, 'POST', '/api/v1/executions/ret_done/cancel', {
      command_id: 'ret_exec_cancel',
    });
    expect(late.body.result).toBe('too_late');
    const doomed = [plain, approved, mine, thread, finished];

    // --- Old sessions that something still needs: they stay. ---
    const waiting = await turn(null, '/tool calculator {"expression": "7*6"}');
    await settled(waiting, 'input_required');
    // Its `error` goes to the endpoint that keeps failing: that delivery stays pending.
    const undelivered = await turn(null, '/fail permanent');
    await settled(undelivered);
    const blocked = await execution('watch', 'ret_blocked', 'blocked');
    // A Telegram thread whose last reply still has to be sent (a retry scheduled).
    const outbox = await telegramThread(5102, 'another chat');
    const leased = await turn(null, 'a worker holds me');
    await settled(leased);
    // Another tenant's old session: a tenant's prune never touches it.
    const foreign = await turn(null, 'somebody else');
    await settled(foreign);
    const recent = await turn(null, 'just now');
    await settled(recent);
    await webhooksQuiet();

    await server.db.query(
      `update adapter_replies set state = 'pending', next_attempt_at = now() + interval '1 day'
        where session_id = $1`,
      [outbox],
    );
    for (const sessionId of [...doomed, waiting, undelivered, blocked, outbox, leased, foreign]) {
      await age(sessionId);
    }
    await server.db.query(`update memory_effects set applied_at = applied_at - interval '2 days'`);
    await server.db.query(
      `update sessions set lease_token = 'held', lease_expires_at = now() + interval '1 hour'
        where session_id = $1`,
      [leased],
    );
    for (const table of ['sessions', 'messages', 'turns', 'usage', 'webhook_deliveries']) {
      await server.db.query(`update ${table} set tenant = 'other' where session_id = $1`, [
        foreign,
      ]);
    }
    // Fire records: the schedule's (next fire time ahead) and a removed schedule's.
    const year = 365 * 86_400_000;
    await server.db.transaction(async (tx) => {
      for (const [schedule, back, executionId] of [
        ['nightly', 3, 'sched.nightly.a'],
        ['nightly', 2, 'sched.nightly.b'],
        ['nightly', 1, null],
        ['retired', 2, 'sched.retired.a'],
      ] as const) {
        await recordFire(tx, {
          schedule,
          fireTime: new Date(Date.now() - back * year),
          tenant: 'default',
          executionId,
          outcome: executionId === null ? 'skipped' : 'started',
        });
      }
    });

    // What the run must remove: every row of the doomed sessions, the other old events of
    // the tenant, its old finished deliveries, old memory effects and fire records.
    const cutoff = new Date(Date.now() - 86_400_000);
    const expected = { ...zeroReport(), ...(await rowsOf(doomed)) };
    expected.events = await count(
      `select count(*) as n from events e join sessions s using (session_id)
        where s.tenant = 'default' and e.at < $1`,
      [cutoff],
    );
    expected.webhook_deliveries =
      (expected.webhook_deliveries ?? 0) +
      (await count(
        `select count(*) as n from webhook_deliveries
        where tenant = 'default' and state <> 'pending' and created_at < $1
          and not (session_id = any($2::text[]))`,
        [cutoff, doomed],
      ));
    expected.memory_effects = await count('select count(*) as n from memory_effects');
    expected.schedule_fires = 2;
    for (const table of ['sessions', 'messages', 'events', 'executions', 'webhook_deliveries']) {
      expect(expected[table], `${table} rows seeded`).toBeGreaterThan(0);
    }
    for (const table of sessionTables) {
      if (table !== 'personal_sessions' && table !== 'rewinds' && table !== 'execution_commands') {
        expect(expected[table], `${table} rows seeded`).toBeGreaterThan(0);
      }
    }
    expect(expected.rewinds).toBe(1);
    expect(expected.personal_sessions).toBe(1);
    expect(expected.execution_commands).toBe(1);
    expect(expected.memory_effects).toBe(1);
    const usageBefore = await count('select count(*) as n from usage');
    const memoriesBefore = await count('select count(*) as n from memories');
    const kept = await rowsOf([recent]);

    const pruned = await request(server.url, 'POST', '/api/v1/admin/prune', {
      older_than_days: 1,
      rules: ['events', 'deliveries', 'sessions'],
      batch_size: 2,
    });
    expect(pruned.status).toBe(200);
    expect(pruned.body.removed).toEqual(expected);
    expect(pruned.body.pruned_events).toBe(expected.events);
    expect(pruned.body.skipped).toBe(false);
    // The journals cut back: the sessions kept whose events were all old (the leased one's
    // too: events are pruned under a lease, as before; only whole sessions wait for it).
    expect(pruned.body.sessions).toBe(5);
    // Five sessions two at a time, the rest in small batches too.
    expect(pruned.body.batches).toBeGreaterThanOrEqual(3 + 5);

    // Gone: every row of the doomed sessions.
    expect(Object.values(await rowsOf(doomed)).every((rows) => rows === 0)).toBe(true);
    // Billing rows and the user's memories outlive their sessions.
    expect(await count('select count(*) as n from usage')).toBe(usageBefore);
    expect(await count('select count(*) as n from memories')).toBe(memoriesBefore);
    // Stayed: the sessions still needed, and what they need.
    const sessionsLeft = await server.db.query<{ session_id: string }>(
      'select session_id from sessions where session_id = any($1::text[])',
      [[waiting, undelivered, blocked, outbox, leased, foreign, recent]],
    );
    expect(sessionsLeft.rows).toHaveLength(7);
    expect(
      await count(
        `select count(*) as n from input_requests where session_id = $1 and state = 'pending'`,
        [waiting],
      ),
    ).toBe(1);
    expect(
      await count(
        `select count(*) as n from webhook_deliveries
          where session_id = $1 and webhook = 'stuck' and state = 'pending'`,
        [undelivered],
      ),
    ).toBe(1);
    expect(
      await count(
        `select count(*) as n from webhook_deliveries where state = 'pending' and webhook = 'stuck'`,
      ),
    ).toBe(1);
    expect(
      await count(`select count(*) as n from adapter_replies where session_id = $1`, [outbox]),
    ).toBeGreaterThan(0);
    expect((await request(server.url, 'GET', '/api/v1/executions/ret_blocked')).body.status).toBe(
      'blocked',
    );
    expect(await rowsOf([recent])).toEqual(kept);
    expect(
      await count(`select count(*) as n from events where session_id = $1`, [foreign]),
    ).toBeGreaterThan(0);
    // A pruned journal answers an old cursor with 410; the projection says where it starts.
    const waitingNow = (await request(server.url, 'GET', `/api/v1/chat/sessions/${waiting}`)).body;
    expect(waitingNow.earliest_sequence).toBe(waitingNow.latest_sequence + 1);
    const resync = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${waiting}/events?after=0`,
    );
    expect(resync.status).toBe(410);
    // The schedule keeps its latest fire and its latest started execution.
    const fires = await server.db.query<{ schedule: string; execution_id: string | null }>(
      'select schedule, execution_id from schedule_fires order by fire_time',
    );
    expect(fires.rows).toEqual([
      { schedule: 'nightly', execution_id: 'sched.nightly.b' },
      { schedule: 'nightly', execution_id: null },
    ]);

    // Usage has its own rule (billing): off unless asked for, then in batches of two.
    const oldUsage = await count(
      `select count(*) as n from usage where tenant = 'default' and at < $1`,
      [cutoff],
    );
    expect(oldUsage).toBeGreaterThan(2);
    const billing = await request(server.url, 'POST', '/api/v1/admin/prune', {
      older_than_days: 1,
      rules: ['usage'],
      batch_size: 2,
    });
    expect(billing.body.removed).toEqual({ ...zeroReport(), usage: oldUsage });
    expect(billing.body.batches).toBe(Math.ceil(oldUsage / 2));

    // The lease ends: the next run takes that session whole, and a deployment-wide run
    // (a worker's) takes the other tenant's too, with the Chat SDK's expired state.
    await server.db.query(
      `update sessions set lease_token = null, lease_expires_at = null where session_id = $1`,
      [leased],
    );
    const state = new ParleyChatState(server.db, createLogger({ level: 'silent' }));
    await state.connect();
    await state.set('retention-expired', { a: 1 }, 1);
    await state.set('retention-kept', { a: 2 });
    await state.acquireLock('retention-thread', 1);
    await state.appendToList('retention-list', 'x', { ttlMs: 1 });
    await state.enqueue(
      'retention-queue',
      { enqueuedAt: Date.now() - 5000, expiresAt: Date.now() - 1000, message: {} as never },
      10,
    );
    const expiredState = Object.fromEntries(
      await Promise.all(
        ['locks', 'cache', 'lists', 'queues'].map(async (table) => [
          `chat_state_${table}`,
          await count(
            `select count(*) as n from chat_state_${table} where expires_at <= now() + interval '1 second'`,
          ),
        ]),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const wide = await prune(
      server.db,
      { events: cutoff, deliveries: cutoff, sessions: cutoff, usage: null, chatState: true },
      {
        tenant: null,
        batchSize: 2,
        followers: { adapters: ['telegram'], webhooks: ['crm', 'stuck', 'gone'] },
      },
    );
    expect(wide.removed).toMatchObject({ sessions: 2, ...expiredState });
    expect(
      await count(`select count(*) as n from sessions where session_id = any($1::text[])`, [
        [leased, foreign],
      ]),
    ).toBe(0);
    expect(await state.get('retention-kept')).toEqual({ a: 2 });

    // `parley prune` prints the per-table report of the admin route.
    const printed = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [
          'dist/cli/main.js',
          'prune',
          '--older-than-seconds',
          '0',
          '--rules',
          'events',
          '--url',
          server.url,
        ],
        { env: { ...process.env, PARLEY_CONFIG: '' }, stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.on('exit', (code) => resolve({ code, stdout }));
    });
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^pruned \d+ events in \d+ sessions\n {2}events {16}\d+\n$/);
    expect(
      await count(
        `select count(*) as n from events e join sessions s using (session_id) where s.tenant = 'default'`,
      ),
    ).toBe(0);
  });
});

describe("a worker's periodic retention run", () => {
  it('applies the retention keys of the configuration', async () => {
    const worker = await startTestServer({
      retention: { keep_events_days: 1, keep_sessions_days: 1, prune_interval_ms: 200 },
    });
    try {
      // Deliveries follow the events' age unless set; usage is kept unless set.
      expect(worker.config.retention).toMatchObject({
        keepEventsDays: 1,
        keepDeliveriesDays: 1,
        keepSessionsDays: 1,
        keepUsageDays: null,
      });
      const admitted = await request(worker.url, 'POST', '/api/v1/chat/turns', {
        turn_id: 'periodic_1',
        message: 'soon forgotten',
      });
      const sessionId: string = admitted.body.session_id;
      const kept = (
        await request(worker.url, 'POST', '/api/v1/chat/turns', {
          turn_id: 'periodic_2',
          message: 'still here',
        })
      ).body.session_id as string;
      for (const id of [sessionId, kept]) {
        await until(
          async () => (await request(worker.url, 'GET', `/api/v1/chat/sessions/${id}`)).body,
          (session) => session.state === 'idle' && session.current_turn === null,
          'the reply',
        );
      }
      await worker.db.query(
        `update sessions set updated_at = now() - interval '2 days' where session_id = $1`,
        [sessionId],
      );
      await until(
        async () =>
          (await worker.db.query('select 1 from sessions where session_id = $1', [sessionId])).rows
            .length,
        (left) => left === 0,
        'the old session to be pruned',
      );
      const usage = await worker.db.query<{ n: number }>(
        'select count(*) as n from usage where session_id = $1',
        [sessionId],
      );
      expect(Number(usage.rows[0]?.n)).toBeGreaterThan(0);
      expect((await request(worker.url, 'GET', `/api/v1/chat/sessions/${kept}`)).status).toBe(200);
    } finally {
      await worker.close();
    }
  });
});
