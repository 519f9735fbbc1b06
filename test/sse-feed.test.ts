import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/api/app.js';
import { createLogger } from '../src/log.js';
import type { Db } from '../src/store/db.js';
import { Wakeups } from '../src/store/wakeups.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { SseClient } from './support/sse.js';

/**
 * Issue 6, items 5, 6, 15 and 16 as the wire sees them: a stream's bytes are the same live
 * and replayed (events are rebuilt from the transcript, or carried by wake-ups); a client
 * that stops reading holds bounded memory and is disconnected; idle streams cost one
 * query per poll interval per process, not one per stream.
 */

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    server: { keepalive_ms: 300 },
    limits: { stream_buffer_bytes: 256 * 1024 },
    agents: {
      default: {
        greeting: 'Hello! Ask me anything.',
        tools: { calculator: 'approve', clock: 'allow' },
      },
    },
  });
});
afterAll(async () => {
  await checkJournalInvariants(server.db);
  await server.close();
});

/** Reads a stream's raw text and splits it into its durable frames (with an `id:`). */
class RawStream {
  text = '';
  private readonly controller = new AbortController();
  private constructor() {}

  static async open(sessionId: string, after = 0): Promise<RawStream> {
    const stream = new RawStream();
    const response = await fetch(
      `${server.url}/api/v1/chat/sessions/${sessionId}/events?after=${after}`,
      { signal: stream.controller.signal },
    );
    expect(response.status).toBe(200);
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of response.body as ReadableStream<Uint8Array>) {
          stream.text += decoder.decode(chunk, { stream: true });
        }
      } catch {
        // closed
      }
    })();
    return stream;
  }

  get frames(): string[] {
    return this.text
      .split('\n\n')
      .filter((block) => block.startsWith('id: '))
      .map((block) => `${block}\n\n`);
  }

  close(): void {
    this.controller.abort();
  }
}

async function admit(body: Record<string, unknown>): Promise<any> {
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', body);
  expect(admitted.status).toBe(202);
  return admitted.body;
}

async function settled(sessionId: string): Promise<any> {
  return until(
    async () => (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body,
    (projection) =>
      ['idle', 'input_required'].includes(projection.state) && projection.queued_turns <= 1,
    `session ${sessionId} to settle`,
  );
}

describe('replay', () => {
  it('gives a reconnecting client the very bytes a live client received', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {});
    const sessionId = created.body.session_id as string;
    const live = await RawStream.open(sessionId);
    // Short events (carried by wake-ups) and long ones (too big for a wake-up: read),
    // greeting, user posts, replies with options, tools, an approval, a cancel.
    await admit({
      session_id: sessionId,
      turn_id: 'rp_1',
      message: 'hello "quoted" <b>x</b> é 💬',
    });
    await settled(sessionId);
    await admit({
      session_id: sessionId,
      turn_id: 'rp_2',
      message: `long ${'word '.repeat(3000)}`,
    });
    await settled(sessionId);
    await admit({
      session_id: sessionId,
      turn_id: 'rp_3',
      message: 'pick\n/options red|green|blue',
    });
    await settled(sessionId);
    await admit({ session_id: sessionId, turn_id: 'rp_4', message: '/tool clock {}' });
    await settled(sessionId);
    await admit({
      session_id: sessionId,
      turn_id: 'rp_5',
      message: '/tool calculator {"expression": "6*7", "__proto__": 1}',
    });
    const waiting = await settled(sessionId);
    if (waiting.pending_input) {
      await request(
        server.url,
        'POST',
        `/api/v1/chat/sessions/${sessionId}/inputs/${waiting.pending_input.request_id}`,
        { expected_sequence: waiting.pending_input.expected_sequence, approved: true },
      );
    }
    await until(
      async () => (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body,
      (projection) => projection.state === 'idle' && projection.queued_turns === 0,
      'the approved turn',
    );
    const latest = (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body
      .latest_sequence as number;
    await until(
      () => live.frames.length,
      (count) => count === latest,
      'the live stream to catch up',
    );
    live.close();

    const replay = await RawStream.open(sessionId);
    await until(
      () => replay.frames.length,
      (count) => count === latest,
      'the replay',
    );
    replay.close();
    expect(replay.frames).toEqual(live.frames);
    // And from a cursor in the middle, the same tail.
    const middle = Math.floor(latest / 2);
    const resumed = await RawStream.open(sessionId, middle);
    await until(
      () => resumed.frames.length,
      (count) => count === latest - middle,
      'the tail',
    );
    resumed.close();
    expect(resumed.frames).toEqual(live.frames.slice(middle));
    const types = live.frames.map((frame) => /event: (\w+)/.exec(frame)?.[1]);
    for (const type of [
      'message',
      'turn_started',
      'text_delta',
      'done',
      'tool_call',
      'tool_result',
      'input_required',
      'input_resolved',
      'usage',
    ]) {
      expect(types).toContain(type);
    }
  });
});

describe('a client that stops reading', () => {
  it('holds bounded memory, is disconnected, and slows nobody', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {});
    const sessionId = created.body.session_id as string;
    // A journal several megabytes long, so that a paused reader's buffers fill up.
    const message = `bulk ${'x'.repeat(30_000)}`;
    for (let index = 0; index < 60; index++) {
      await admit({ session_id: sessionId, turn_id: `bulk_${index}`, message });
    }
    await until(
      async () => (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body,
      (projection) => projection.state === 'idle' && projection.queued_turns === 0,
      'the bulk turns',
    );
    const metrics = async () => {
      const text = String((await request(server.url, 'GET', '/metrics')).body);
      const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
      return {
        connections: value('parley_sse_connections'),
        unflushed: value('parley_sse_unflushed_bytes'),
      };
    };
    const baseline = await metrics();
    // Twenty clients that ask for the whole journal and never read a byte.
    const { port } = new URL(server.url);
    const paused: Socket[] = [];
    for (let index = 0; index < 20; index++) {
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('connect', () => {
        socket.write(
          `GET /api/v1/chat/sessions/${sessionId}/events HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`,
        );
        socket.pause();
      });
      socket.on('error', () => {});
      paused.push(socket);
    }
    let peak = 0;
    // A live reader meanwhile gets a new turn at once.
    const latest = (await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`)).body
      .latest_sequence as number;
    const reader = await SseClient.open(server.url, sessionId, { after: latest });
    await admit({ session_id: sessionId, turn_id: 'after_bulk', message: 'still there?' });
    await reader.waitFor(
      (client) =>
        client.events.some(
          (event) => event.type === 'done' && event.turn_ids.includes('after_bulk'),
        ),
      60_000,
    );
    reader.close();
    // The paused ones are cut off once they have read nothing for two keep-alives; until
    // then each holds at most the configured bound.
    await until(
      async () => {
        const now = await metrics();
        peak = Math.max(peak, now.unflushed - baseline.unflushed);
        return now;
      },
      (now) => now.connections <= baseline.connections,
      'the paused streams to be closed',
      60_000,
    );
    expect(peak).toBeLessThanOrEqual(20 * 256 * 1024);
    for (const socket of paused) socket.destroy();
  });
});

describe('idle streams', () => {
  it('cost one query per poll interval per process, not one per stream', async () => {
    // The API of this process, on a database handle that counts its statements.
    let statements = 0;
    const counting: Db = {
      ...server.db,
      query: (statement, params) => {
        statements += 1;
        return server.db.query(statement, params);
      },
    };
    const wakeups = new Wakeups(server.db);
    await wakeups.start();
    const pollMs = 200;
    const app = await buildApp({
      db: counting,
      wakeups,
      config: { ...server.config, runtime: { ...server.config.runtime, pollMs } },
      log: createLogger({ level: 'silent' }),
      providersReady: () => true,
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const sessions: string[] = [];
      for (let index = 0; index < 10; index++) {
        sessions.push((await request(url, 'POST', '/api/v1/chat/sessions', {})).body.session_id);
      }
      // Fifty idle streams over ten sessions, all caught up.
      const streams = await Promise.all(
        Array.from({ length: 50 }, (_unused, index) =>
          SseClient.open(url, sessions[index % sessions.length] as string),
        ),
      );
      await until(
        () => streams.filter((stream) => stream.events.length > 0).length,
        (count) => count === 50,
        'every stream to replay its greeting',
      );
      const before = statements;
      const started = Date.now();
      await new Promise((resolve) => setTimeout(resolve, pollMs * 10));
      const intervals = (Date.now() - started) / pollMs;
      // One feed poll per interval (plus slack for timer drift), against 50 per interval
      // if every stream polled the journal itself.
      expect(statements - before).toBeLessThanOrEqual(Math.ceil(intervals) + 3);
      for (const stream of streams) stream.close();
    } finally {
      await app.close();
      await wakeups.stop();
    }
  });
});
