import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engine } from './support/db.js';
import { FakeTelegram, telegramMessageUpdate } from './support/platforms/telegram.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Issue 10's and 11's write paths raced against themselves and each other: requests sent
// at once, on the leg's engine (truly concurrent on PostgreSQL, whose pool runs them on
// separate connections; serialized by PGlite's one connection, which must give the same
// outcomes). Killed processes in the middle are missions.postgres.test.ts and
// adapters-restart.test.ts.

const botToken = '123456:races-telegram-token';
const secretToken = 'races-telegram-secret';
const at = engine === 'postgres' ? 20 : 8;
let server: TestServer;
let telegram: FakeTelegram;
let counter = 0;

beforeAll(async () => {
  telegram = await FakeTelegram.start(botToken);
  server = await startTestServer(
    {
      agents: { default: {}, helper: { completion_text: 'shipped' } },
      missions: { once: { prompt: 'Write the report.' } },
      adapters: {
        telegram: {
          tenant: 'default',
          bot_token_env: 'RACE_TG_TOKEN',
          secret_token_env: 'RACE_TG_SECRET',
          api_url: telegram.server.url,
          edit_interval_ms: 20,
          retry_base_ms: 50,
        },
      },
    },
    { RACE_TG_TOKEN: botToken, RACE_TG_SECRET: secretToken },
  );
});
afterAll(async () => {
  await server?.close();
  await telegram?.close();
});

const count = async (sql: string, params: unknown[]) =>
  Number((await server.db.query<{ n: number }>(sql, params)).rows[0]?.n);

async function untilDone(sessionId: string, turnId: string): Promise<void> {
  await until(
    async () =>
      (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}/messages`)).body
        .items as { turn_id: string | null; role: string }[],
    (items) => items.some((item) => item.turn_id === turnId && item.role === 'assistant'),
    `the reply to ${turnId}`,
  );
  await until(
    async () => (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body,
    (session) => session.state === 'idle',
    'the session to be idle',
  );
}

describe('dispatching one execution id at once', () => {
  it(`${at} identical dispatches are one execution, run once`, async () => {
    const id = `race_exec_${counter++}`;
    const answers = await Promise.all(
      Array.from({ length: at }, () =>
        request(server.url, 'POST', '/api/v1/missions/once/executions', { execution_id: id }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 202));
    expect(new Set(answers.map((answer) => answer.body.session_id)).size).toBe(1);
    expect(await count('select count(*) as n from executions where execution_id = $1', [id])).toBe(
      1,
    );
    await until(
      async () => (await request(server.url, 'GET', `/api/v1/executions/${id}`)).body,
      (execution) => execution.status === 'success',
      'the execution to succeed',
    );
    expect(
      await count('select count(*) as n from turns where turn_id like $1', [`exec.${id}.%`]),
    ).toBe(1);
  });

  it('dispatches with different inputs: one wins, the others are 409 execution_conflict', async () => {
    const id = `race_conflict_${counter++}`;
    const answers = await Promise.all(
      Array.from({ length: at }, (_, index) =>
        request(server.url, 'POST', '/api/v1/missions/once/executions', {
          execution_id: id,
          input: { variant: index },
        }),
      ),
    );
    const won = answers.filter((answer) => answer.status === 202);
    expect(won).toHaveLength(1);
    for (const answer of answers.filter((item) => item.status !== 202)) {
      expect(answer.status).toBe(409);
      expect(answer.body.error).toBe('execution_conflict');
    }
    expect(await count('select count(*) as n from executions where execution_id = $1', [id])).toBe(
      1,
    );
  });

  it('cancels with one command id at once: one command, one cancelled execution', async () => {
    const id = `race_cancel_${counter++}`;
    await request(server.url, 'POST', '/api/v1/missions/once/executions', { execution_id: id });
    const answers = await Promise.all(
      Array.from({ length: at }, () =>
        request(server.url, 'POST', `/api/v1/executions/${id}/cancel`, { command_id: 'stop_1' }),
      ),
    );
    for (const answer of answers) expect(answer.status).toBeLessThan(300);
    expect(
      await count('select count(*) as n from execution_commands where execution_id = $1', [id]),
    ).toBe(1);
    const ended = await until(
      async () => (await request(server.url, 'GET', `/api/v1/executions/${id}`)).body,
      (execution) => ['cancelled', 'success'].includes(execution.status),
      'the execution to end',
    );
    // A cancel that lands after the one iteration finished is too late, never a second run.
    expect(
      await count('select count(*) as n from turns where turn_id like $1', [`exec.${id}.%`]),
    ).toBeLessThanOrEqual(1);
    expect(['cancelled', 'success']).toContain(ended.status);
  });
});

describe('a rewind racing a new message', () => {
  it('either refuses (session_busy) or lands wholly before the message', async () => {
    const first = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: `race_rw_${counter++}`,
      message: 'first',
    });
    const sessionId = first.body.session_id as string;
    await untilDone(sessionId, first.body.turn_id);
    const checkpoints = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/checkpoints`,
    );
    const checkpoint = checkpoints.body.items[0].sequence as number;
    const outcomes = new Set<number>();
    for (let round = 0; round < (engine === 'postgres' ? 12 : 5); round++) {
      const turnId = `race_rw_${counter++}`;
      const [rewind, admission] = await Promise.all([
        request(server.url, 'POST', `/api/v1/chat/sessions/${sessionId}/rewind`, {
          to_sequence: checkpoint,
        }),
        request(server.url, 'POST', '/api/v1/chat/turns', {
          session_id: sessionId,
          turn_id: turnId,
          message: `round ${round}`,
        }),
      ]);
      expect(admission.status).toBe(202);
      outcomes.add(rewind.status);
      if (rewind.status === 200) {
        // The rewind committed first (its event precedes the message it raced), or after
        // the raced turn had ended (its `done` precedes the rewind): never in between.
        if (rewind.body.sequence > admission.body.sequence) {
          const ended = await server.db.query<{ sequence: number }>(
            `select sequence from events
              where session_id = $1 and type = 'done' and turn_id = $2`,
            [sessionId, turnId],
          );
          expect(Number(ended.rows[0]?.sequence)).toBeLessThan(rewind.body.sequence);
        }
      } else {
        expect(rewind.status).toBe(409);
        expect(rewind.body.error).toBe('session_busy');
      }
      await untilDone(sessionId, turnId);
    }
    // Never a rewind recorded for a range a running turn was answered from.
    expect(
      await count('select count(*) as n from rewinds where session_id = $1', [sessionId]),
    ).toBe(
      await count(`select count(*) as n from events where session_id = $1 and type = 'rewound'`, [
        sessionId,
      ]),
    );
    expect([...outcomes].every((status) => status === 200 || status === 409)).toBe(true);
  });
});

describe('editing one agent at once', () => {
  it(`${at} PUTs: each answered, one row, and the API shows what the row holds`, async () => {
    const answers = await Promise.all(
      Array.from({ length: at }, (_, index) =>
        request(server.url, 'PUT', '/api/v1/agents/helper', {
          completion_text: `edit ${index}`,
        }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
    const rows = await server.db.query<{ content_hash: string; definition: any }>(
      `select content_hash, definition from definitions
        where kind = 'agent' and name = 'helper' and tenant = 'default'`,
    );
    expect(rows.rows).toHaveLength(1);
    const row = rows.rows[0] as { content_hash: string; definition: any };
    // The last write is one of the edits, whole, and every process's view ends on it.
    expect(answers.map((answer) => answer.body.content_hash)).toContain(row.content_hash);
    expect(row.definition.completion_text).toMatch(/^edit \d+$/);
    const shown = await request(server.url, 'GET', '/api/v1/agents/helper');
    expect(shown.body.content_hash).toBe(row.content_hash);
    expect(shown.body.definition.completion_text).toBe(row.definition.completion_text);
  });
});

describe('a platform delivering one update several times at once', () => {
  it('is one turn and one reply', async () => {
    const update = telegramMessageUpdate({
      updateId: 9000,
      chatId: 4242,
      messageId: 77,
      userId: 4242,
      text: 'hello once',
    });
    const answers = await Promise.all(
      Array.from({ length: at }, () =>
        fetch(`${server.url}/adapters/telegram/webhook`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-telegram-bot-api-secret-token': secretToken,
          },
          body: update,
        }),
      ),
    );
    for (const answer of answers) expect(answer.status).toBe(200);
    await until(
      async () => telegram.messages.filter((message) => message.chat_id === '4242'),
      (messages) => messages.some((message) => message.text.includes('hello once')),
      'the reply on Telegram',
    );
    expect(
      await count(`select count(*) as n from messages where role = 'user' and content = $1`, [
        'hello once',
      ]),
    ).toBe(1);
    expect(
      await count(`select count(*) as n from adapter_threads where adapter = 'telegram'`, []),
    ).toBe(1);
    expect(telegram.messages.filter((message) => message.chat_id === '4242')).toHaveLength(1);
  });
});
