import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engine } from './support/db.js';
import { until } from './support/poll.js';
import { FakeTelegram } from './support/platforms/telegram.js';
import { rawRequest, type RawResponse } from './support/raw.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * Issue 6, item 2: a seeded fuzzer over every endpoint. Each request starts from a valid
 * one and is mutated (fields replaced by hostile values, removed, added; whole bodies
 * replaced; paths, query strings and headers garbled, percent-encoded, NUL-laden). The
 * server must never answer 5xx, and a request it rejects (4xx) — or any GET — must leave
 * the database exactly as it was. The seed is printed with every failure: the same seed
 * replays the same requests (PARLEY_FUZZ_SEED, PARLEY_FUZZ_REQUESTS to override).
 */

const seed = Number(process.env.PARLEY_FUZZ_SEED ?? 20261201);
// The full 3,000 on PostgreSQL; the PGlite leg, slower per request, runs a third of them.
const total = Number(process.env.PARLEY_FUZZ_REQUESTS ?? (engine === 'postgres' ? 3000 : 1000));
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

let server: TestServer;
let telegram: FakeTelegram;
let sessionId = '';
let executionId = '';
let executionSessionId = '';
let checkpoint = 0;
let turnId = '';
let requestId = '';
let expectedSequence = 0;

beforeAll(async () => {
  telegram = await FakeTelegram.start(telegramToken);
  server = await startTestServer(
    {
      agents: {
        default: { tools: { calculator: 'approve' } },
        other: { greeting: 'hi' },
      },
      missions: {
        once: { prompt: 'Write the report.' },
        looping: { prompt: 'Tidy.', loop_prompt: '/decide continue', max_iterations: 2 },
      },
      adapters: {
        telegram: {
          tenant: 'default',
          bot_token_env: 'FUZZ_TG_TOKEN',
          secret_token_env: 'FUZZ_TG_SECRET',
          api_url: telegram.server.url,
        },
      },
    },
    { FUZZ_TG_TOKEN: telegramToken, FUZZ_TG_SECRET: telegramSecret },
  );
  // An execution that ran to its end: its session has a checkpoint to fork and rewind to.
  const dispatched = await request(server.url, 'POST', '/api/v1/missions/once/executions', {
    execution_id: 'fuzz_exec',
  });
  executionId = dispatched.body.execution_id;
  const finished = await until(
    async () => (await request(server.url, 'GET', `/api/v1/executions/${executionId}`)).body,
    (execution) => execution.status === 'success',
    'the execution',
  );
  executionSessionId = finished.session_id;
  const checkpoints = await request(
    server.url,
    'GET',
    `/api/v1/chat/sessions/${executionSessionId}/checkpoints`,
  );
  checkpoint = checkpoints.body.items[0].sequence;
  // A session with a finished turn and a pending approval, so that every endpoint has a
  // real resource to aim at; then the worker stops, so only requests write.
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
    turn_id: 'fuzz_base',
    message: '/tool calculator {"expression": "1+1"}',
  });
  sessionId = admitted.body.session_id;
  turnId = 'fuzz_base';
  const pending = await until(
    async () => (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body,
    (projection) => projection.pending_input !== null,
    'the approval request',
  );
  requestId = pending.pending_input.request_id;
  expectedSequence = pending.pending_input.expected_sequence;
  await server.worker?.stop();
  await server.executions?.stop();
  await server.scheduler?.stop();
});
afterAll(async () => {
  await server?.close();
  await telegram?.close();
});

async function fingerprint(): Promise<string> {
  const found = await server.db.query(
    `select (select count(*) from sessions) as sessions, (select count(*) from turns) as turns,
            (select count(*) from messages) as messages, (select count(*) from events) as events,
            (select count(*) from commands) as commands,
            (select count(*) from input_requests where state = 'pending') as pending,
            (select count(*) from option_offers where locked_at is not null) as locked,
            (select coalesce(sum(last_sequence), 0) from sessions) as sequences,
            (select coalesce(sum(input_count), 0) from sessions) as inputs,
            (select max(updated_at) from sessions) as updated,
            (select string_agg(state, ',' order by session_id) from sessions) as states,
            (select coalesce(sum(earliest_sequence), 0) from sessions) as earliest,
            (select count(*) from attachments) as attachments,
            (select count(*) from memories) as memories,
            (select count(*) from usage) as usage,
            (select count(*) from models) as models,
            (select count(*) from definitions) as definitions,
            (select coalesce(sum(revision), 0) from definitions) as revisions,
            (select count(*) from executions) as executions,
            (select count(*) from execution_commands) as execution_commands,
            (select count(*) from schedule_fires) as fires,
            (select count(*) from rewinds) as rewinds,
            (select count(*) from personal_sessions where archived_at is null) as personal,
            (select count(*) from adapter_threads) as threads,
            (select count(*) from chat_state_subscriptions) as subscriptions`,
  );
  return JSON.stringify(found.rows[0]);
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
    ]);
  const value = () => (random() < 0.2 ? real() : pick(hostileValues));
  const segment = () =>
    pick([
      sessionId,
      sessionId,
      turnId,
      requestId,
      executionId,
      executionSessionId,
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
    ]);
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

  const endpoints: (() => FuzzRequest)[] = [
    () => json('POST', '/api/v1/chat/sessions', { agent: 'default', title: 't' }),
    () => get(`/api/v1/chat/sessions?${query({ limit: '5', cursor: queryValue() })}`),
    () => get(`/api/v1/chat/sessions/${segment()}`),
    () =>
      get(
        `/api/v1/chat/sessions/${segment()}/messages?${query({ before: queryValue(), limit: '3' })}`,
      ),
    () =>
      json('POST', '/api/v1/chat/turns', {
        session_id: sessionId,
        turn_id: `fz_${Math.floor(random() * 1e9)}`,
        message: 'hello',
        agent: 'default',
      }),
    () =>
      json('POST', '/api/v1/chat/turns', {
        session_id: sessionId,
        turn_id: turnId,
        message: 'a different message',
        option: { request_id: requestId, value: 'x' },
      }),
    () => {
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
    () =>
      json('POST', `/api/v1/chat/sessions/${segment()}/turns/${segment()}/cancel`, {
        command_id: `c_${Math.floor(random() * 1e9)}`,
      }),
    () =>
      json('POST', `/api/v1/chat/sessions/${segment()}/inputs/${segment()}`, {
        expected_sequence: expectedSequence,
        approved: random() < 0.5,
        response: { reason: 'fuzz' },
      }),
    () => json('POST', `/api/v1/admin/sessions/${segment()}/unpark`, {}),
    () => json('POST', '/api/v1/admin/models/sync', { provider: 'demo' }),
    () =>
      get(
        `/api/v1/models?${query({ provider: queryValue(), include_removed: pick(['true', 'false', 'x']) })}`,
      ),
    () =>
      get(
        `/api/v1/usage?${query({ group_by: pick(['model', 'agent', 'tenant', 'x']), from: queryValue(), to: queryValue() })}`,
      ),
    () =>
      get(
        `/api/v1/inputs?${query({ state: pick(['pending', 'x', '']), limit: queryValue(), cursor: queryValue() })}`,
      ),
    () => get(pick(['/api/v1/agents', '/api/v1/me', `/api/v1/agents/${segment()}/tools`])),
    () => get(`/api/v1/memories?${query({ user: queryValue() })}`),
    () => ({ method: 'DELETE', path: `/api/v1/memories/${segment()}`, headers: {}, body: null }),
    () => get(`/api/v1/chat/sessions/${segment()}/files`),
    () => get(`/api/v1/chat/sessions/${segment()}/attachments/${segment()}`),
    () => ({
      method: 'POST',
      path: `/api/v1/chat/sessions/${segment()}/attachments`,
      headers: {
        'content-type': pick(['image/png', 'image/gif', 'text/plain', 'image/svg+xml', '']),
      },
      body: pick(['', 'not an image', '\u0089PNG\r\n\u001a\n', 'GIF89a', 'x'.repeat(3000)]),
    }),
    () => json('POST', '/api/v1/admin/prune', { older_than_days: 3650 }),
    // Issue 10: missions, executions, schedules, checkpoints, personal sessions, definitions.
    () => get(pick(['/api/v1/missions', '/api/v1/schedules', `/api/v1/missions/${segment()}`])),
    () =>
      json('POST', `/api/v1/missions/${pick(['once', 'looping', segment()])}/executions`, {
        execution_id: `fx_${Math.floor(random() * 1e9)}`,
        input: { topic: 'x' },
        agent: 'default',
      }),
    () =>
      get(
        `/api/v1/executions?${query({ mission: queryValue(), status: pick(['success', 'x', '']), user: queryValue(), cursor: queryValue(), limit: queryValue() })}`,
      ),
    () => get(`/api/v1/executions/${segment()}`),
    () =>
      json('POST', `/api/v1/executions/${segment()}/${pick(['cancel', 'unblock'])}`, {
        command_id: `x_${Math.floor(random() * 1e9)}`,
        note: 'go on',
      }),
    () =>
      get(
        `/api/v1/chat/sessions/${segment()}/checkpoints?${query({ limit: queryValue(), cursor: queryValue() })}`,
      ),
    () =>
      json('POST', `/api/v1/chat/sessions/${segment()}/fork`, {
        at_sequence: checkpoint,
        title: 'fork',
      }),
    () => json('POST', `/api/v1/chat/sessions/${segment()}/rewind`, { to_sequence: checkpoint }),
    () => json('POST', `/api/v1/agents/${segment()}/${pick(['personal', 'personal/archive'])}`, {}),
    () =>
      json('PUT', `/api/v1/${pick(['agents', 'missions'])}/${segment()}`, {
        instructions: 'Be brief.',
        prompt: 'Do it.',
        namespace: 'fuzz',
      }),
    () => ({
      method: pick(['GET', 'DELETE']),
      path: `/api/v1/${pick(['agents', 'missions'])}/${segment()}`,
      headers: {},
      body: null,
    }),
    // Issue 11: the platforms' endpoints (Telegram configured, the others not) and webhooks.
    () => ({
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
    () =>
      json(
        'POST',
        pick([
          '/adapters/slack/events',
          '/adapters/discord/interactions',
          '/adapters/gchat/events',
          '/adapters/teams/messages',
          `/adapters/${segment()}/events`,
        ]),
        { type: 'event_callback', event: { type: 'message', text: 'hi' } },
      ),
    () => get('/api/v1/admin/webhooks'),
    () => get(pick(['/healthz', '/readyz', '/metrics', '/api/v1/openapi.json', '/api/v1/nothing'])),
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

  return (): FuzzRequest => {
    const fuzzed = pick(endpoints)();
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
    return fuzzed;
  };
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

describe(`fuzzing every endpoint (seed ${seed})`, () => {
  it(`answers ${total} hostile requests without a 5xx, and rejected ones write nothing`, async () => {
    const next = generator(prng(seed));
    const statuses = new Map<number, number>();
    const codes = new Set<string>();
    let before = await fingerprint();
    for (let index = 0; index < total; index++) {
      const fuzzed = next();
      const where = `seed ${seed}, request ${index}: ${fuzzed.method} ${fuzzed.path} ${fuzzed.body?.slice(0, 200) ?? ''}`;
      const response = await send(fuzzed);
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      expect(response.status, where).toBeGreaterThanOrEqual(200);
      expect(response.status, `${where} → ${response.body.slice(0, 300)}`).toBeLessThan(500);
      if (response.status >= 400) {
        const body = JSON.parse(response.body) as { error?: unknown; message?: unknown };
        expect(typeof body.error, where).toBe('string');
        expect(typeof body.message, where).toBe('string');
        codes.add(String(body.error));
      }
      const after = await fingerprint();
      if (response.status >= 400 || fuzzed.method === 'GET') {
        expect(after, `${where} wrote something`).toBe(before);
      }
      before = after;
    }

    // The mix exercised both sides: accepted requests and many kinds of refusal.
    expect([...statuses.keys()].filter((status) => status < 300).length).toBeGreaterThan(0);
    expect(codes.size, [...codes].join(', ')).toBeGreaterThan(8);
  }, 600_000);
});
