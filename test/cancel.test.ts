import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { Worker } from '../src/runtime/worker.js';
import { builtInTools } from '../src/tools/registry.js';
import { claimSession } from '../src/store/claimSession.js';
import { startAttempt } from '../src/store/startAttempt.js';
import { Wakeups } from '../src/store/wakeups.js';
import { checkJournalInvariants } from './support/invariants.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

let server: TestServer;
let apiOnly: TestServer;

beforeAll(async () => {
  server = await startTestServer({}, { PARLEY_DEMO_DELAY_MS: '40' });
  apiOnly = await startTestServer(
    { runtime: { lease_ttl_ms: 600, heartbeat_ms: 200 } },
    {},
    { api: true, worker: false },
  );
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await checkJournalInvariants(apiOnly.db);
  await server.close();
  await apiOnly.close();
});

const words = (count: number) => Array.from({ length: count }, (_, index) => `w${index}`).join(' ');
const cancel = (target: TestServer, sessionId: string, turnId: string, commandId: string) =>
  request(target.url, 'POST', `/api/v1/chat/sessions/${sessionId}/turns/${turnId}/cancel`, {
    command_id: commandId,
  });

function startWorker(target: TestServer): { worker: Worker; stop: () => Promise<void> } {
  const wakeups = new Wakeups(target.db);
  const worker = new Worker({
    db: target.db,
    wakeups,
    config: target.config,
    resolveModel: createModelRegistry(target.config),
    log: createLogger({ level: 'silent' }),
    owner: 'test-worker',
    tools: builtInTools(),
  });
  const started = wakeups.start().then(() => worker.start());
  return {
    worker,
    stop: async () => {
      await started;
      await worker.stop();
      await wakeups.stop();
    },
  };
}

describe('cancel (§5)', () => {
  it('stops a streaming turn at once, journals one cancelled, and is idempotent by command_id', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'c_stream',
      message: words(80),
    });
    const sessionId = admitted.body.session_id;
    const stream = await SseClient.open(server.url, sessionId);
    await stream.waitFor(
      (client) => client.events.filter((event) => event.type === 'text_delta').length >= 2,
    );
    const first = await cancel(server, sessionId, 'c_stream', 'cmd_1');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ result: 'cancelled', state: 'cancelling' });
    expect(typeof first.body.sequence).toBe('number');
    await stream.waitForType('cancelled');
    const cancelled = stream.events.find((event) => event.type === 'cancelled');
    expect(cancelled).toMatchObject({
      command_id: 'cmd_1',
      turn_ids: ['c_stream'],
      actor: { user: 'local', tenant: 'default' },
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    stream.close();
    expect(stream.events.some((event) => event.type === 'done')).toBe(false);
    // nothing after cancelled: the provider stream was aborted
    expect(stream.events[stream.events.length - 1].type).toBe('cancelled');
    const text = stream.events
      .filter((event) => event.type === 'text_delta')
      .map((event) => event.delta)
      .join('');
    expect(text.split(' ').length).toBeLessThan(80);

    const retry = await cancel(server, sessionId, 'c_stream', 'cmd_1');
    expect(retry.body).toMatchObject({ result: 'duplicate', state: 'cancelling' });
    const later = await cancel(server, sessionId, 'c_stream', 'cmd_2');
    expect(later.body).toMatchObject({ result: 'too_late', state: 'cancelled' });
    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body).toMatchObject({ state: 'idle', current_turn: null });
    // the session goes on answering new turns
    await request(server.url, 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: 'c_after',
      message: 'again',
    });
    const resumed = await SseClient.open(server.url, sessionId, { after: cancelled.sequence });
    await resumed.waitForType('done');
    resumed.close();
  });

  it('answers too_late after done, and rejects bad requests with codes', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'c_done',
      message: 'quick',
    });
    const sessionId = admitted.body.session_id;
    const stream = await SseClient.open(server.url, sessionId);
    await stream.waitForType('done');
    stream.close();
    const late = await cancel(server, sessionId, 'c_done', 'cmd_late');
    expect(late.body).toMatchObject({ result: 'too_late', state: 'done' });
    expect(late.body.sequence).toBe(stream.events[stream.events.length - 1].sequence);
    expect((await cancel(server, sessionId, 'nope', 'cmd_x')).body.error).toBe('turn_not_found');
    expect((await cancel(server, '01NOSESSION', 'c_done', 'cmd_y')).status).toBe(404);
    const bad = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/turns/c_done/cancel`,
      {
        command_id: 'has space',
      },
    );
    expect(bad.status).toBe(400);
    const reused = await cancel(server, sessionId, 'other_turn', 'cmd_late');
    expect(reused.status).toBe(409);
    expect(reused.body.error).toBe('command_conflict');
  });

  it('cancels the whole running burst when one of its folded turns is cancelled', async () => {
    const first = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'c_fold_a',
      message: words(80),
    });
    const sessionId = first.body.session_id;
    const stream = await SseClient.open(server.url, sessionId);
    await stream.waitFor((client) => client.events.some((event) => event.type === 'text_delta'));
    await request(server.url, 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: 'c_fold_b',
      message: 'and this',
    });
    // the pivot folds b into the running burst
    await stream.waitFor((client) =>
      client.events.some((event) => event.type === 'turn_started' && event.turn_ids.length === 2),
    );
    const answer = await cancel(server, sessionId, 'c_fold_b', 'cmd_fold');
    expect(answer.body.result).toBe('cancelled');
    await stream.waitForType('cancelled');
    stream.close();
    expect(stream.events.find((event) => event.type === 'cancelled').turn_ids).toEqual([
      'c_fold_a',
      'c_fold_b',
    ]);
    expect(stream.events.some((event) => event.type === 'done')).toBe(false);
  });

  it('removes just a queued turn, and the worker answers the rest', async () => {
    const a = await request(apiOnly.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'q_a',
      message: 'first',
    });
    const sessionId = a.body.session_id;
    await request(apiOnly.url, 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: 'q_b',
      message: 'second',
    });
    await request(apiOnly.url, 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: 'q_c',
      message: 'third',
    });
    const answer = await cancel(apiOnly, sessionId, 'q_b', 'cmd_q');
    expect(answer.body).toMatchObject({ result: 'cancelled', state: 'cancelled' });
    const worker = startWorker(apiOnly);
    try {
      const stream = await SseClient.open(apiOnly.url, sessionId);
      await stream.waitForType('done');
      stream.close();
      const cancelled = stream.events.find((event) => event.type === 'cancelled');
      expect(cancelled).toMatchObject({
        command_id: 'cmd_q',
        turn_ids: ['q_b'],
        actor: { user: 'local', tenant: 'default' },
      });
      const done = stream.events.find((event) => event.type === 'done');
      expect(done.turn_ids).toEqual(['q_a', 'q_c']);
      expect(done.final_message.content).not.toContain('second');
    } finally {
      await worker.stop();
    }
  });

  it('is honoured by the next worker when the cancelled turn’s worker died', async () => {
    const admitted = await request(apiOnly.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'dead_1',
      message: 'never answered',
    });
    const sessionId = admitted.body.session_id;
    // A worker claims and starts the turn, then "dies" (never writes again).
    const claimed = await claimSession(apiOnly.db, {
      token: 'dead-token',
      owner: 'dead',
      ttlMs: 600,
      maxTurns: 50,
    });
    expect(claimed?.session_id).toBe(sessionId);
    await startAttempt(
      apiOnly.db,
      { sessionId, tenant: 'default', token: 'dead-token' },
      {
        turnIds: ['dead_1'],
        attempt: 1,
        resetPrevious: false,
        seenSequence: null,
        historyBefore: 0,
        historyLimit: 0,
        historyBytes: 0,
      },
    );
    const answer = await cancel(apiOnly, sessionId, 'dead_1', 'cmd_dead');
    expect(answer.body).toMatchObject({ result: 'cancelled', state: 'cancelling' });
    const worker = startWorker(apiOnly);
    try {
      const stream = await SseClient.open(apiOnly.url, sessionId);
      await stream.waitForType('cancelled');
      stream.close();
      expect(stream.events.map((event) => event.type)).toEqual([
        'message',
        'turn_started',
        'cancelled',
      ]);
    } finally {
      await worker.stop();
    }
  });
});
