import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig } from '../src/config/load.js';
import type { Db } from '../src/store/db.js';
import { readEvents } from '../src/store/readEvents.js';
import { builtInTools } from '../src/tools/registry.js';
import type { Tool } from '../src/tools/types.js';
import { openTestDb } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import {
  admit,
  journal,
  runtimeConfig,
  startTestWorker,
  waitForTerminal,
  type SeenEvent,
  type TestWorker,
} from './support/runtime-helpers.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * The progress watchdog (docs/governance.md, "Progress watchdog"): a model step that
 * streams only keep-alives (the demo `/keepalive`) or nothing at all (`/stall`) for
 * `watchdog.stall_ms`, and a tool that ignores its abort signal past its timeout, are
 * stalls: journaled as `stalled`, retried `watchdog.retries` times per turn, then the turn
 * ends with error `stalled`; /metrics counts them. `stall_ms: 0` changes nothing.
 */

const stallsOf = (events: SeenEvent[]) =>
  events
    .filter((event) => event.type === 'stalled')
    .map((event) => ({ what: event.what, action: event.action }));

describe('watchdog configuration', () => {
  it('has documented defaults and names a bad key', () => {
    expect(compileConfig({}).watchdog).toEqual({ stallMs: 120_000, retries: 1 });
    expect(compileConfig({ watchdog: { stall_ms: 0, retries: 3 } }).watchdog).toEqual({
      stallMs: 0,
      retries: 3,
    });
    expect(() => compileConfig({ watchdog: { stall_ms: -1 } })).toThrow(/watchdog\.stall_ms/);
    expect(() => compileConfig({ watchdog: { retries: 1.5 } })).toThrow(/watchdog\.retries/);
    expect(() => compileConfig({ watchdog: { stall: 5 } })).toThrow(/watchdog/);
  });
});

describe('model steps that make no progress', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({
      // Long enough that a loaded machine never makes a healthy stream look stalled; the
      // provider's own idle timeout (30 s) stays out of the way.
      watchdog: { stall_ms: 1000, retries: 1 },
      agents: { default: { model: 'demo/echo' } },
    });
  });
  afterAll(async () => {
    await checkJournalInvariants(server.db);
    await server.close();
  });

  let counter = 0;
  async function turn(message: string, sessionId?: string) {
    const turnId = `wd_${Date.now()}_${counter++}`;
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: turnId,
      message,
      ...(sessionId ? { session_id: sessionId } : {}),
    });
    expect(admitted.status, JSON.stringify(admitted.body)).toBe(202);
    const session = admitted.body.session_id as string;
    const events = await until(
      () => readEvents(server.db, session, 0, 10_000),
      (list) =>
        list.some(
          (event) =>
            ['done', 'error', 'cancelled'].includes(event.type) &&
            (event as SeenEvent).turn_ids.includes(turnId),
        ),
      `the end of ${turnId}`,
    );
    return { sessionId: session, events: events as SeenEvent[] };
  }

  async function stallCounts(): Promise<Record<string, number>> {
    const metrics = await request(server.url, 'GET', '/metrics');
    expect(metrics.status).toBe(200);
    const counts: Record<string, number> = {};
    for (const match of String(metrics.body).matchAll(
      /^parley_stalls_total\{what="([a-z_]+)",action="([a-z]+)"\} (\d+)$/gm,
    )) {
      counts[`${match[1]}/${match[2]}`] = Number(match[3]);
    }
    return counts;
  }

  it('aborts a stream of keep-alives, retries the step, then ends the turn with error stalled; the session goes on', async () => {
    const before = await stallCounts();
    // Every series is there from the start, at 0 before any stall of its kind.
    expect(Object.keys(before).sort()).toEqual(
      ['model_stream', 'no_progress', 'tool'].flatMap((what) => [`${what}/end`, `${what}/retry`]),
    );
    const { sessionId, events } = await turn('/keepalive please');
    expect(stallsOf(events)).toEqual([
      { what: 'model_stream', action: 'retry' },
      { what: 'model_stream', action: 'end' },
    ]);
    const stalled = events.filter((event) => event.type === 'stalled');
    for (const event of stalled) {
      expect(event.turn_id).toBe(events.find((e) => e.type === 'turn_started')?.turn_id);
      expect(event.since_ms).toBeGreaterThanOrEqual(1000);
    }
    // The stalled attempt had streamed two words: clients drop them before the retry.
    const types = events.map((event) => event.type);
    expect(types.indexOf('attempt_reset')).toBeGreaterThan(types.indexOf('stalled'));
    expect(events.filter((event) => event.type === 'turn_started')).toHaveLength(2);
    const error = events.find((event) => event.type === 'error');
    expect(error).toMatchObject({ code: 'stalled' });
    expect(types.at(-1)).toBe('error');
    expect(events.some((event) => event.type === 'done')).toBe(false);
    // Both aborted calls are billed as failed.
    expect(events.filter((event) => event.type === 'usage').map((event) => event.outcome)).toEqual([
      'failed',
      'failed',
    ]);

    const next = await turn('hello again', sessionId);
    const done = next.events.filter((event) => event.type === 'done').at(-1);
    expect(done?.final_message.content).toBe('You said: hello again');

    const after = await stallCounts();
    expect((after['model_stream/retry'] ?? 0) - (before['model_stream/retry'] ?? 0)).toBe(1);
    expect((after['model_stream/end'] ?? 0) - (before['model_stream/end'] ?? 0)).toBe(1);
  });

  it('aborts a stream that went silent (no_progress) before the provider’s idle timeout does', async () => {
    const before = await stallCounts();
    const { events } = await turn('/stall please');
    expect(stallsOf(events)).toEqual([
      { what: 'no_progress', action: 'retry' },
      { what: 'no_progress', action: 'end' },
    ]);
    expect(events.find((event) => event.type === 'error')).toMatchObject({ code: 'stalled' });
    const after = await stallCounts();
    expect((after['no_progress/retry'] ?? 0) - (before['no_progress/retry'] ?? 0)).toBe(1);
    expect((after['no_progress/end'] ?? 0) - (before['no_progress/end'] ?? 0)).toBe(1);
  });
});

describe('tools that ignore their abort signal', () => {
  let db: Db;
  let closeDb: () => Promise<void>;
  let worker: TestWorker | null = null;
  const started: string[] = [];

  // Never settles and never looks at its signal: past its timeout and grace it is abandoned.
  const deaf: Tool = {
    name: 'fake__deaf',
    description: 'a tool that ignores its abort signal',
    inputSchema: {
      type: 'object',
      properties: { id: { type: 'string' } },
      required: ['id'],
      additionalProperties: false,
    },
    source: 'mcp:fake',
    execute: (args) => {
      started.push((args as { id: string }).id);
      return new Promise(() => {});
    },
  };
  const tools = () => {
    const registry = builtInTools({});
    registry.set(deaf.name, deaf);
    return registry;
  };
  const configWith = (watchdog: Record<string, unknown>) =>
    runtimeConfig({
      watchdog,
      tools: { max_concurrency: 1 },
      // Declared so the agent may name `fake__…` tools; never connected to.
      mcp_servers: { fake: { command: 'node', args: ['-e', ''] } },
      providers: { demo: { kind: 'demo', idle_timeout_ms: 300 } },
      agents: { default: { tools: { fake__deaf: { policy: 'allow', timeout_ms: 200 } } } },
    });

  beforeAll(async () => {
    ({ db, close: closeDb } = await openTestDb());
  });
  afterEach(async () => {
    await worker?.stop();
    worker = null;
  });
  afterAll(async () => {
    await checkJournalInvariants(db);
    await closeDb();
  });

  let counter = 0;
  async function run(config: ReturnType<typeof configWith>, message: string, sessionId?: string) {
    worker ??= await startTestWorker(db, config, 'watchdog', tools());
    const turnId = `wt_${Date.now()}_${counter++}`;
    const admitted = await admit(db, { sessionId: sessionId ?? null, turnId, message });
    const terminal = await waitForTerminal(db, admitted.session_id, turnId);
    const events = (await journal(db, admitted.session_id)).filter(
      (event) => event.turn_id === turnId || event.turn_ids?.includes(turnId),
    );
    return { sessionId: admitted.session_id, terminal, events };
  }

  it('journals a stall for the call, which the model sees as a timeout, and goes on', async () => {
    const config = configWith({ stall_ms: 60_000, retries: 1 });
    const { terminal, events } = await run(config, '/tool fake__deaf {"id": "a"}');
    expect(terminal.type).toBe('done');
    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      ok: false,
      error: { code: 'timeout' },
    });
    const stalled = events.filter((event) => event.type === 'stalled');
    expect(stalled).toHaveLength(1);
    expect(stalled[0]).toMatchObject({ what: 'tool', action: 'retry', tool: 'fake__deaf' });
    expect(stalled[0]?.call_id).toBe(events.find((event) => event.type === 'tool_call')?.call_id);
  });

  it('ends the turn with error stalled once the budget is spent; later calls never start', async () => {
    started.length = 0;
    const config = configWith({ stall_ms: 60_000, retries: 1 });
    const message = ['a', 'b', 'c'].map((id) => `/tool fake__deaf {"id": "${id}"}`).join('\n');
    const { sessionId, terminal, events } = await run(config, message);
    expect(terminal).toMatchObject({ type: 'error', code: 'stalled' });
    expect(stallsOf(events)).toEqual([
      { what: 'tool', action: 'retry' },
      { what: 'tool', action: 'end' },
    ]);
    expect(started).toEqual(['a', 'b']);
    expect(events.filter((event) => event.type === 'tool_result')).toHaveLength(2);

    const next = await run(config, 'still there?', sessionId);
    expect(next.terminal.type).toBe('done');
    expect(next.terminal.final_message.content).toBe('You said: still there?');
  });

  it('changes nothing when stall_ms is 0: no stalled event, the provider’s timeouts as before', async () => {
    const config = configWith({ stall_ms: 0, retries: 1 });
    const tool = await run(config, '/tool fake__deaf {"id": "z"}');
    expect(tool.terminal.type).toBe('done');
    expect(tool.events.find((event) => event.type === 'tool_result')).toMatchObject({
      ok: false,
      error: { code: 'timeout' },
    });
    expect(stallsOf(tool.events)).toEqual([]);

    const silent = await run(config, '/stall please');
    expect(silent.terminal).toMatchObject({ type: 'error', code: 'provider_timeout' });
    expect(stallsOf(silent.events)).toEqual([]);
  });
});
