import { randomUUID } from 'node:crypto';
import {
  EventType,
  HttpAgent,
  runHttpRequest,
  transformHttpEventStream,
  type BaseEvent,
  type RunAgentInput,
} from '@ag-ui/client';
import type { Observable } from 'rxjs';
import { AGUI_MEDIA_TYPE } from '@ag-ui/encoder';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEvents } from '../src/store/readEvents.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { providerKey } from './support/providerKinds.js';
import { ProviderServer } from './support/providerServer.js';
import { startTestServer, type TestServer } from './support/server.js';

// AG-UI (docs/protocols.md), driven by the official `@ag-ui/client` HttpAgent pointed at
// `<parley>/ag-ui/<agent>`, on the engine the suite runs on.

let server: TestServer;
let providers: ProviderServer;
const keys = { alice: 'alice-key', bob: 'bob-key', globex: 'globex-key' };

/** The docs' subclass: `connect()` follows the thread's events (HttpAgent has none). */
class ParleyAgent extends HttpAgent {
  lastEventId: string | null = null;
  /** The thread stream's query (`?include=reasoning`). */
  query = '';

  protected override connect(input: RunAgentInput): Observable<BaseEvent> {
    const headers: Record<string, string> = { ...this.headers, accept: 'text/event-stream' };
    if (this.lastEventId) headers['last-event-id'] = this.lastEventId;
    const url = `${this.url}/threads/${encodeURIComponent(input.threadId)}/events${this.query}`;
    return transformHttpEventStream(
      runHttpRequest(() => fetch(url, { headers, signal: this.abortController.signal })),
    );
  }
}

function agentFor(name: string, key: string, threadId?: string, query = ''): ParleyAgent {
  return new ParleyAgent({
    url: `${server.url}/ag-ui/${name}${query}`,
    headers: { authorization: `Bearer ${key}` },
    ...(threadId ? { threadId } : {}),
  });
}

/** Asks for AG-UI's binary transport, and records the content type each run came in. */
class ProtoAgent extends ParleyAgent {
  contentTypes: (string | null)[] = [];

  constructor(url: string, key: string) {
    super({
      url,
      headers: { authorization: `Bearer ${key}` },
      fetch: async (target, init) => {
        const response = await fetch(target, init);
        this.contentTypes.push(response.headers.get('content-type'));
        return response;
      },
    });
  }

  protected override requestInit(input: RunAgentInput): RequestInit {
    const init = super.requestInit(input);
    return { ...init, headers: { ...(init.headers as object), Accept: AGUI_MEDIA_TYPE } };
  }
}

/**
 * Events with their ids named by first appearance, no timestamps, and a message's
 * consecutive text deltas as one (the journal batches deltas by time): two runs compare.
 */
function normalized(events: BaseEvent[]): Record<string, unknown>[] {
  const names = new Map<string, string>();
  const idKeys = ['threadId', 'runId', 'messageId', 'toolCallId', 'parentMessageId'];
  const out: Record<string, unknown>[] = [];
  for (const event of events) {
    const copy: Record<string, unknown> = { ...event };
    delete copy.timestamp;
    for (const key of idKeys) {
      const value = copy[key];
      if (typeof value !== 'string') continue;
      if (!names.has(value)) names.set(value, `id${names.size}`);
      copy[key] = names.get(value);
    }
    const last = out.at(-1);
    if (
      copy.type === EventType.TEXT_MESSAGE_CONTENT &&
      last?.type === copy.type &&
      last.messageId === copy.messageId
    ) {
      last.delta = `${String(last.delta)}${String(copy.delta)}`;
      continue;
    }
    out.push(copy);
  }
  return out;
}

function say(agent: HttpAgent, text: string): void {
  agent.addMessage({ id: randomUUID(), role: 'user', content: text });
}

/** Runs the agent and records every event the client saw. */
async function run(agent: HttpAgent, parameters: Parameters<HttpAgent['runAgent']>[0] = {}) {
  const events: BaseEvent[] = [];
  const result = await agent.runAgent(parameters, {
    onEvent: ({ event }) => void events.push(event),
  });
  return { events, result };
}

/**
 * Follows the thread with the docs' `connect()` (through the client's own event checks)
 * until `runs` runs have finished; what the client saw.
 */
async function watchThread(watcher: ParleyAgent, runs: number): Promise<BaseEvent[]> {
  const seen: BaseEvent[] = [];
  const connected = watcher.connectAgent({}, { onEvent: ({ event }) => void seen.push(event) });
  await until(
    async () => seen.filter((event) => event.type === EventType.RUN_FINISHED).length,
    (finished) => finished >= runs,
    `the connected client to see ${runs} runs`,
  );
  await watcher.detachActiveRun();
  watcher.abortRun();
  await connected;
  return seen;
}

const types = (events: BaseEvent[]) => events.map((event) => event.type as string);

const count = async (sql: string, params: unknown[] = []) =>
  (await server.db.query<{ n: number }>(`select count(*)::int as n from ${sql}`, params)).rows[0]
    ?.n;

async function sessionOf(threadId: string): Promise<string> {
  const found = await server.db.query<{ session_id: string }>(
    'select session_id from ag_ui_threads where thread_id = $1',
    [threadId],
  );
  return found.rows[0]?.session_id as string;
}

/** The raw SSE frames of a thread stream, read until `enough` says so. */
async function readThread(
  name: string,
  threadId: string,
  cursor: string | null,
  enough: (events: Record<string, unknown>[]) => boolean,
  query = '',
): Promise<{ events: Record<string, unknown>[]; ids: string[] }> {
  const controller = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${keys.alice}` };
  if (cursor !== null) headers['last-event-id'] = cursor;
  const response = await fetch(`${server.url}/ag-ui/${name}/threads/${threadId}/events${query}`, {
    headers,
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const events: Record<string, unknown>[] = [];
  const ids: string[] = [];
  let buffer = '';
  try {
    while (!enough(events)) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      const blocks = buffer.split('\n\n');
      buffer = blocks.pop() ?? '';
      for (const block of blocks) {
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) ids.push(line.slice(4));
          if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)));
        }
      }
    }
  } finally {
    controller.abort();
  }
  return { events, ids };
}

beforeAll(async () => {
  // A provider whose model reasons (Anthropic's thinking, replayed from a fixture).
  providers = await ProviderServer.start();
  providers.on('POST', '/v1/messages', { stream: 'anthropic/thinking.txt' });
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gus', roles: [] },
        ],
      },
      providers: {
        demo: { kind: 'demo' },
        thinking: {
          kind: 'anthropic',
          api_key_env: 'TEST_PROVIDER_KEY',
          base_url: `${providers.url}/v1`,
        },
      },
      agents: {
        default: { model: 'demo/echo', visibility: 'private' },
        thinker: { model: 'thinking/claude-sonnet-4-5', visibility: 'private' },
        helper: {
          model: 'demo/echo',
          visibility: 'private',
          tools: { calculator: 'allow', show_panel: 'allow' },
        },
        careful: { model: 'demo/echo', visibility: 'private', tools: { calculator: 'approve' } },
        curious: { model: 'demo/echo', visibility: 'private', tools: { ask_user: 'allow' } },
        keeper: {
          model: 'demo/echo',
          visibility: 'private',
          state: { schema: { type: 'object' }, initial: {} },
        },
        ledger: {
          model: 'demo/echo',
          visibility: 'private',
          state: {
            schema: {
              type: 'object',
              properties: { step: { type: 'integer' }, note: { type: 'string' } },
              additionalProperties: false,
            },
            initial: { step: 0 },
          },
        },
      },
    },
    { K_ALICE: keys.alice, K_BOB: keys.bob, K_GLOBEX: keys.globex, TEST_PROVIDER_KEY: providerKey },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
  await providers?.close();
});

describe('AG-UI with the official HttpAgent', () => {
  it("runs a turn: the reply streams as a text message; the client's thread is one session", async () => {
    const agent = agentFor('default', keys.alice);
    say(agent, 'hello there');
    const first = await run(agent);
    expect(first.events[0]?.type).toBe('RUN_STARTED');
    expect(types(first.events)).toEqual(
      expect.arrayContaining(['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END']),
    );
    expect(first.events.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'success' },
    });
    const reply = agent.messages.at(-1);
    expect(reply).toMatchObject({ role: 'assistant', content: 'You said: hello there' });

    // The next run on the same thread continues the same session.
    say(agent, 'and again');
    await run(agent);
    expect(agent.messages.at(-1)).toMatchObject({ content: 'You said: and again' });
    const sessionId = await sessionOf(agent.threadId);
    const users = await server.db.query<{ content: string }>(
      `select content from messages where session_id = $1 and role = 'user' order by sequence`,
      [sessionId],
    );
    expect(users.rows.map((row) => row.content)).toEqual(['hello there', 'and again']);
    // A session id is a thread id too.
    const bySession = agentFor('default', keys.alice, sessionId);
    say(bySession, 'third');
    await run(bySession);
    expect(bySession.messages.at(-1)).toMatchObject({ content: 'You said: third' });
    expect(await count('ag_ui_threads where session_id = $1', [sessionId])).toBe(1);
  });

  it("shows the agent's tool calls and their results", async () => {
    const agent = agentFor('helper', keys.alice);
    say(agent, '/tool calculator {"expression": "6*7"}');
    const { events } = await run(agent);
    expect(types(events)).toEqual(
      expect.arrayContaining([
        'TOOL_CALL_START',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_END',
        'TOOL_CALL_RESULT',
      ]),
    );
    const start = events.find((event) => event.type === EventType.TOOL_CALL_START) as unknown as {
      toolCallName: string;
      toolCallId: string;
    };
    expect(start.toolCallName).toBe('calculator');
    const result = events.find((event) => event.type === EventType.TOOL_CALL_RESULT) as unknown as {
      toolCallId: string;
      content: string;
    };
    expect(result.toolCallId).toBe(start.toolCallId);
    expect(result.content).toContain('42');
    expect(agent.messages.at(-1)?.content).toContain('42');
  });

  it("lets the model call the front end's own tools: the run ends, the next brings the output", async () => {
    const agent = agentFor('helper', keys.alice);
    const weather = {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    };
    say(agent, '/tool get_weather {"city": "Paris"}');
    const first = await run(agent, { tools: [weather] });
    const start = first.events.find((event) => event.type === EventType.TOOL_CALL_START) as
      { toolCallName: string; toolCallId: string } | undefined;
    expect(start?.toolCallName).toBe('get_weather');
    // No interrupt, no result: the client runs it.
    expect(first.events.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'success' },
    });
    expect(types(first.events)).not.toContain('TOOL_CALL_RESULT');
    const callId = (start as { toolCallId: string }).toolCallId;
    const sessionId = await sessionOf(agent.threadId);
    expect(
      await count(
        `input_requests where session_id = $1 and kind = 'client_tool' and state = 'pending'`,
        [sessionId],
      ),
    ).toBe(1);
    // Bob may see nothing of it, and may not answer it through Parley's inbox route.
    const request = await server.db.query<{ request_id: string; expected_sequence: string }>(
      `select request_id, expected_sequence from input_requests where session_id = $1 and kind = 'client_tool'`,
      [sessionId],
    );
    const row = request.rows[0] as { request_id: string; expected_sequence: string };

    agent.addMessage({
      id: randomUUID(),
      role: 'tool',
      toolCallId: callId,
      content: 'sunny, 21 C',
    });
    const runId = randomUUID();
    const second = await run(agent, { runId, tools: [weather] });
    const result = second.events.find((event) => event.type === EventType.TOOL_CALL_RESULT) as
      { toolCallId: string; content: string } | undefined;
    expect(result).toMatchObject({ toolCallId: callId });
    expect(result?.content).toContain('sunny, 21 C');
    expect(agent.messages.at(-1)?.content).toContain('sunny, 21 C');
    expect(second.events.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'success' },
    });
    // One turn: the output answered its call; the same output again is the same run.
    expect(await count(`turns where session_id = $1`, [sessionId])).toBe(1);
    const again = await fetch(`${server.url}/ag-ui/helper`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: agent.threadId,
        runId,
        messages: agent.messages.slice(0, -1),
      }),
    });
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('sunny, 21 C');
    expect(await count(`turns where session_id = $1`, [sessionId])).toBe(1);
    const answered = await fetch(
      `${server.url}/api/v1/chat/sessions/${sessionId}/inputs/${row.request_id}`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
        body: JSON.stringify({ expected_sequence: Number(row.expected_sequence), approved: true }),
      },
    );
    expect(answered.status).toBe(409);
  });

  it("refuses the front end's tools that are no tools, and an output for no call, writing nothing", async () => {
    const before = await count('sessions');
    const post = (body: Record<string, unknown>) =>
      fetch(`${server.url}/ag-ui/helper`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
        body: JSON.stringify({ threadId: randomUUID(), runId: randomUUID(), ...body }),
      });
    const hello = [{ id: 'm1', role: 'user', content: 'hello' }];
    for (const tools of [
      [{ name: 'calculator' }],
      [{ name: 'ask_user' }],
      [{ name: 'orders__list' }],
      [{ name: 'has space' }],
      [{ name: 'twice' }, { name: 'twice' }],
      [{ name: 'flat', parameters: { type: 'string' } }],
    ]) {
      const response = await post({ messages: hello, tools });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: 'invalid_request', field: 'tools' });
    }
    const orphan = await post({
      messages: [...hello, { id: 'm2', role: 'tool', toolCallId: 'call_none', content: 'x' }],
    });
    expect(orphan.status).toBe(404);
    expect(await count('sessions')).toBe(before);
  });

  it("shows the panels a run's agent makes as parley.panel custom events", async () => {
    const agent = agentFor('helper', keys.alice);
    say(agent, '/panel {"type": "progress", "label": "Shipped", "value": 3, "max": 4}');
    const { events } = await run(agent);
    const panels = events.filter(
      (event) =>
        event.type === EventType.CUSTOM && (event as { name?: string }).name === 'parley.panel',
    );
    expect(panels).toHaveLength(1);
    expect((panels[0] as unknown as { value: unknown }).value).toMatchObject({
      action: 'shown',
      scope: 'session',
      title: 'Panel',
      document: { type: 'progress', value: 3, max: 4 },
      by: 'tool',
    });
    // Inside the run: after RUN_STARTED, before its end.
    const order = types(events);
    expect(order.indexOf('CUSTOM')).toBeGreaterThan(order.indexOf('RUN_STARTED'));
    expect(order.indexOf('CUSTOM')).toBeLessThan(order.lastIndexOf('RUN_FINISHED'));
  });

  it('ends a run waiting for approval with an interrupt, and the next run resumes it', async () => {
    const agent = agentFor('careful', keys.alice);
    say(agent, '/tool calculator {"expression": "2+3"}');
    const waiting = await run(agent);
    const finished = waiting.events.at(-1) as unknown as {
      type: string;
      outcome: {
        type: string;
        interrupts: {
          id: string;
          reason: string;
          toolCallId: string;
          metadata: Record<string, unknown>;
        }[];
      };
    };
    expect(finished.type).toBe('RUN_FINISHED');
    expect(finished.outcome.type).toBe('interrupt');
    const [interrupt] = finished.outcome.interrupts;
    expect(interrupt).toMatchObject({
      reason: 'approval',
      metadata: { kind: 'approval', tool: 'calculator', arguments: { expression: '2+3' } },
    });
    const requestId = (interrupt as { id: string }).id;

    const resumed = await run(agent, {
      resume: [{ interruptId: requestId, status: 'resolved', payload: { approved: true } }],
    });
    expect(resumed.events[0]?.type).toBe('RUN_STARTED');
    expect(resumed.events.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'success' },
    });
    expect(types(resumed.events)).toContain('TOOL_CALL_RESULT');
    expect(agent.messages.at(-1)?.content).toContain('5');
    // The answer is Parley's: journaled once, by alice.
    const resolved = await server.db.query<{ payload: { actor: { user: string } } }>(
      `select payload from events where type = 'input_resolved' and payload ->> 'request_id' = $1`,
      [requestId],
    );
    expect(resolved.rows.map((row) => row.payload.actor.user)).toEqual(['alice']);

    // The thread stream names the turn going on after the answer as a run of its own; a
    // reconnect inside that run re-opens it under the same id, not the turn's.
    const finishedRuns = (events: Record<string, unknown>[]) =>
      events.filter((event) => event.type === EventType.RUN_FINISHED).length;
    const whole = await readThread(
      'careful',
      agent.threadId,
      '0',
      (events) => finishedRuns(events) >= 2,
    );
    const runIds = whole.events
      .filter((event) => event.type === EventType.RUN_STARTED)
      .map((event) => event.runId);
    expect(runIds).toHaveLength(2);
    expect(runIds[1]).not.toBe(runIds[0]);
    const starts = (await readEvents(server.db, await sessionOf(agent.threadId), 0, 1000)).filter(
      (event) => event.type === 'turn_started',
    );
    expect(starts.length).toBeGreaterThan(1);
    const inside = await readThread(
      'careful',
      agent.threadId,
      String(starts.at(-1)?.sequence),
      (events) => finishedRuns(events) >= 1,
    );
    expect(inside.events[0]).toMatchObject({ type: 'RUN_STARTED', runId: runIds[1] });
  });

  it('answers a question through resume with the answer as payload', async () => {
    const agent = agentFor('curious', keys.alice);
    say(agent, '/tool ask_user {"question": "Which one?"}');
    const asked = await run(agent);
    const outcome = (
      asked.events.at(-1) as unknown as {
        outcome: { interrupts: { id: string; reason: string }[] };
      }
    ).outcome;
    expect(outcome.interrupts[0]?.reason).toBe('question');
    const answered = await run(agent, {
      resume: [
        {
          interruptId: outcome.interrupts[0]?.id as string,
          status: 'resolved',
          payload: 'the blue one',
        },
      ],
    });
    expect(answered.events.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'success' },
    });
    const results = answered.events.filter((event) => event.type === EventType.TOOL_CALL_RESULT);
    expect(JSON.stringify(results)).toContain('the blue one');
  });

  it("follows the thread across runs, the server's own included, and resumes mid-run exactly", async () => {
    const agent = agentFor('default', keys.alice);
    say(agent, 'a long enough message to stream in several pieces');
    const first = await run(agent);
    const sessionId = await sessionOf(agent.threadId);

    // A turn the AG-UI client did not start (as a mission's or a platform's would be).
    const posted = await fetch(`${server.url}/api/v1/chat/turns`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        turn_id: 'server_side_turn',
        session_id: sessionId,
        message: 'from elsewhere',
      }),
    });
    expect(posted.status).toBe(202);

    const finishedRuns = (events: Record<string, unknown>[]) =>
      events.filter((event) => event.type === EventType.RUN_FINISHED).length;
    const whole = await readThread(
      'default',
      agent.threadId,
      '0',
      (events) => finishedRuns(events) >= 2,
    );
    const runs = whole.events
      .filter((event) => event.type === 'RUN_STARTED')
      .map((event) => event.runId);
    const firstRunId = first.events[0] as unknown as { runId: string };
    expect(runs).toEqual([firstRunId.runId, 'server_side_turn']);
    const text = (events: Record<string, unknown>[], messageId: unknown) =>
      events
        .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT' && event.messageId === messageId)
        .map((event) => event.delta)
        .join('');
    const starts = whole.events.filter((event) => event.type === 'TEXT_MESSAGE_START');
    expect(text(whole.events, starts[1]?.messageId)).toBe('You said: from elsewhere');

    // Resume from the middle of the first reply: the run and its message re-open, with
    // the same ids, and the rest of the text follows without a repeat.
    const deltas = {
      rows: (await readEvents(server.db, sessionId, 0, 1000)).flatMap((event) =>
        event.type === 'text_delta' && event.turn_id === firstRunId.runId
          ? [{ sequence: event.sequence, delta: event.delta }]
          : [],
      ),
    };
    expect(deltas.rows.length).toBeGreaterThan(0);
    const cut = deltas.rows[0] as { sequence: number; delta: string };
    const resumed = await readThread(
      'default',
      agent.threadId,
      String(cut.sequence),
      (events) => finishedRuns(events) >= 2,
    );
    expect(resumed.events.slice(0, 2)).toMatchObject([
      { type: 'RUN_STARTED', runId: firstRunId.runId },
      { type: 'TEXT_MESSAGE_START', messageId: starts[0]?.messageId },
    ]);
    expect(cut.delta + text(resumed.events, starts[0]?.messageId)).toBe(
      'You said: a long enough message to stream in several pieces',
    );
    expect(resumed.events.filter((event) => event.type === 'RUN_STARTED')).toHaveLength(2);
    expect(Number(resumed.ids.at(-1))).toBeGreaterThan(cut.sequence);

    // The docs' connect() subclass sees the same thread through the client's own checks.
    const watcher = agentFor('default', keys.alice, agent.threadId);
    watcher.lastEventId = String(cut.sequence);
    await watchThread(watcher, 2);
    expect(watcher.messages.map((message) => message.content)).toContain(
      'You said: from elsewhere',
    );
  });

  it("speaks AG-UI's binary transport to a client that asks: the same events as over SSE", async () => {
    const message = '/tool calculator {"expression": "6*7"}';
    const overSse = agentFor('helper', keys.alice);
    say(overSse, message);
    const sse = await run(overSse);
    const overProto = new ProtoAgent(`${server.url}/ag-ui/helper`, keys.alice);
    say(overProto, message);
    const proto = await run(overProto);
    expect(overProto.contentTypes).toEqual([AGUI_MEDIA_TYPE]);
    expect(types(proto.events)).toEqual(
      expect.arrayContaining(['TEXT_MESSAGE_CONTENT', 'TOOL_CALL_START', 'TOOL_CALL_RESULT']),
    );
    expect(normalized(proto.events)).toEqual(normalized(sse.events));
    expect(overProto.messages.at(-1)?.content).toContain('42');
    // Accepting anything, or naming SSE higher, is SSE; so is a thread's stream.
    for (const accept of ['*/*', `${AGUI_MEDIA_TYPE};q=0.5, text/event-stream`]) {
      const response = await fetch(`${server.url}/ag-ui/helper`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${keys.alice}`,
          'content-type': 'application/json',
          accept,
        },
        body: JSON.stringify({
          threadId: overProto.threadId,
          runId: randomUUID(),
          messages: [{ id: randomUUID(), role: 'user', content: 'hi' }],
        }),
      });
      expect(response.headers.get('content-type'), accept).toMatch(/^text\/event-stream/);
      await response.text();
    }
    const controller = new AbortController();
    const thread = await fetch(
      `${server.url}/ag-ui/helper/threads/${overProto.threadId}/events?after=0`,
      {
        headers: { authorization: `Bearer ${keys.alice}`, accept: AGUI_MEDIA_TYPE },
        signal: controller.signal,
      },
    );
    expect(thread.headers.get('content-type')).toMatch(/^text\/event-stream/);
    controller.abort();
  });

  it("shows the session's state: a snapshot first, then each change as a JSON Patch", async () => {
    const agent = agentFor('keeper', keys.alice);
    say(agent, '/tool update_state {"set": {"step": 1, "order": {"id": "A17", "items": [1]}}}');
    const first = await run(agent);
    expect(first.events.filter((event) => event.type === EventType.STATE_SNAPSHOT)).toMatchObject([
      { snapshot: { step: 1, order: { id: 'A17', items: [1] } } },
    ]);
    say(agent, '/tool update_state {"set": {"step": 2, "order": {"id": null, "items": [1, 2]}}}');
    await run(agent);

    // The thread's stream shows the first change whole and the second as a patch; the
    // client's own apply (through its checks) ends with the session's state.
    const watcher = agentFor('keeper', keys.alice, agent.threadId);
    watcher.lastEventId = '0';
    const seen = await watchThread(watcher, 2);
    const stateEvents = seen.filter((event) => String(event.type).startsWith('STATE_'));
    expect(stateEvents).toEqual([
      expect.objectContaining({ type: 'STATE_SNAPSHOT' }),
      expect.objectContaining({
        type: 'STATE_DELTA',
        delta: [
          { op: 'replace', path: '/step', value: 2 },
          { op: 'remove', path: '/order/id' },
          { op: 'replace', path: '/order/items', value: [1, 2] },
        ],
      }),
    ]);
    expect(watcher.state).toEqual({ step: 2, order: { items: [1, 2] } });

    // A reconnect inside the second run, before its change, has the first state: the
    // change comes as the same patch, not whole.
    const starts = (await readEvents(server.db, await sessionOf(agent.threadId), 0, 1000)).filter(
      (event) => event.type === 'turn_started',
    );
    const inside = await readThread(
      'keeper',
      agent.threadId,
      String(starts.at(-1)?.sequence),
      (events) => events.some((event) => event.type === EventType.RUN_FINISHED),
    );
    expect(inside.events.filter((event) => String(event.type).startsWith('STATE_'))).toEqual([
      expect.objectContaining({ type: 'STATE_DELTA', delta: stateEvents[1]?.delta }),
    ]);
  });

  it("takes the client's state as the session's before its run's turn, once", async () => {
    const agent = agentFor('ledger', keys.alice);
    agent.setState({ step: 3, note: 'from the client' });
    say(agent, 'hello');
    const runId = randomUUID();
    await run(agent, { runId });
    const sessionId = await sessionOf(agent.threadId);
    const stored = async () =>
      (
        await server.db.query<{ data: unknown }>(
          'select data from sessions where session_id = $1',
          [sessionId],
        )
      ).rows[0]?.data;
    expect(await stored()).toEqual({ step: 3, note: 'from the client' });
    const changes = async () =>
      (
        await server.db.query<{ turn_id: string; payload: { by: string } }>(
          `select turn_id, payload from events where session_id = $1 and type = 'state_changed'
            order by sequence`,
          [sessionId],
        )
      ).rows;
    expect(await changes()).toMatchObject([
      { turn_id: runId, payload: { by: 'user', actor: { user: 'alice', tenant: 'acme' } } },
    ]);
    // Journaled right before the turn's message, in the admission's transaction.
    const journal = (await readEvents(server.db, sessionId, 0, 1000)).map((event) => event.type);
    const at = journal.indexOf('state_changed');
    expect(journal.slice(at, at + 2)).toEqual(['state_changed', 'message']);

    // The same run again (the same runId and state) writes nothing; nor does the state the
    // session has already, nor `{}` (no opinion), which clears nothing.
    const post = (body: Record<string, unknown>) =>
      fetch(`${server.url}/ag-ui/ledger`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
        body: JSON.stringify({ threadId: agent.threadId, ...body }),
      });
    const retried = await post({
      runId,
      messages: [{ id: 'm1', role: 'user', content: 'hello' }],
      state: { step: 3, note: 'from the client' },
    });
    expect(retried.status).toBe(200);
    await retried.text();
    say(agent, 'same state');
    await run(agent);
    const empty = await post({
      runId: randomUUID(),
      messages: [{ id: 'm2', role: 'user', content: 'no opinion' }],
      state: {},
    });
    await empty.text();
    expect(await changes()).toHaveLength(1);
    expect(await stored()).toEqual({ step: 3, note: 'from the client' });
    expect(await count('turns where session_id = $1', [sessionId])).toBe(3);

    // A change the client makes is the next change; the thread's stream shows both.
    agent.setState({ step: 4 });
    say(agent, 'next');
    await run(agent);
    expect(await stored()).toEqual({ step: 4 });
    const watcher = agentFor('ledger', keys.alice, agent.threadId);
    watcher.lastEventId = '0';
    const seen = await watchThread(watcher, 4);
    expect(seen.filter((event) => String(event.type).startsWith('STATE_'))).toEqual([
      expect.objectContaining({
        type: 'STATE_SNAPSHOT',
        snapshot: { step: 3, note: 'from the client' },
      }),
      expect.objectContaining({
        type: 'STATE_DELTA',
        delta: [
          { op: 'remove', path: '/note' },
          { op: 'replace', path: '/step', value: 4 },
        ],
      }),
    ]);
    expect(watcher.state).toEqual({ step: 4 });

    // While a turn is in flight the state is refused; the turn's commit would write over it.
    const stalled = post({
      runId: `stall_${randomUUID()}`,
      messages: [{ id: 'm3', role: 'user', content: '/stall forever' }],
    });
    await until(
      async () => count('sessions where session_id = $1 and lease_token is not null', [sessionId]),
      (held) => held === 1,
      'the stalled turn to hold the session',
    );
    const busy = await post({
      runId: randomUUID(),
      messages: [{ id: 'm4', role: 'user', content: 'meanwhile' }],
      state: { step: 5 },
    });
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ error: 'session_busy', field: 'state' });
    expect(await stored()).toEqual({ step: 4 });
    expect(await count('turns where session_id = $1', [sessionId])).toBe(5);
    const stallId = (
      await server.db.query<{ turn_id: string }>(
        `select turn_id from turns where session_id = $1 and turn_id like 'stall_%'`,
        [sessionId],
      )
    ).rows[0]?.turn_id as string;
    const cancel = await fetch(
      `${server.url}/api/v1/chat/sessions/${sessionId}/turns/${stallId}/cancel`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command_id: `cancel_${stallId}` }),
      },
    );
    expect(cancel.status).toBe(200);
    await (await stalled).text();
  });

  it('a run whose turn is cancelled through Parley ends with the cancelled outcome', async () => {
    const agent = agentFor('default', keys.alice);
    say(agent, '/stall forever');
    const runId = `stall_${Date.now()}`;
    const running = run(agent, { runId });
    const sessionId = await until(
      async () => sessionOf(agent.threadId),
      (found) => typeof found === 'string',
      'the thread to have its session',
    );
    const cancel = await fetch(
      `${server.url}/api/v1/chat/sessions/${sessionId}/turns/${runId}/cancel`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command_id: `cancel_${runId}` }),
      },
    );
    expect(cancel.status).toBe(200);
    const { events } = await running;
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
  });

  it('a retried run (the same runId) is the same turn', async () => {
    const threadId = randomUUID();
    const body = {
      threadId,
      runId: `run_${Date.now()}`,
      messages: [{ id: 'm1', role: 'user', content: 'only once' }],
      tools: [],
      context: [],
    };
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await fetch(`${server.url}/ag-ui/default`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      expect(text).toContain('You said: only once');
    }
    expect(await count('turns where turn_id = $1', [body.runId])).toBe(1);
  });

  it("two first runs of a new thread at once: one session, the thread's one row, both turns in it", async () => {
    const threadId = randomUUID();
    const runOnce = (runId: string, text: string) =>
      fetch(`${server.url}/ag-ui/default`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          threadId,
          runId,
          messages: [{ id: runId, role: 'user', content: text }],
        }),
      }).then((response) => response.text());
    const stamp = Date.now();
    const [one, two] = await Promise.all([
      runOnce(`race_a_${stamp}`, 'first racer'),
      runOnce(`race_b_${stamp}`, 'second racer'),
    ]);
    expect(one).toContain('RUN_FINISHED');
    expect(two).toContain('RUN_FINISHED');
    expect(await count('ag_ui_threads where thread_id = $1', [threadId])).toBe(1);
    const sessionId = await sessionOf(threadId);
    expect(
      await count('turns where session_id = $1 and turn_id in ($2, $3)', [
        sessionId,
        `race_a_${stamp}`,
        `race_b_${stamp}`,
      ]),
    ).toBe(2);
  });

  it("keeps tenants and owners apart: another's thread is missing, and nothing is written", async () => {
    const agent = agentFor('default', keys.alice);
    say(agent, 'private');
    await run(agent);
    const before = await count('sessions');
    for (const key of [keys.bob, keys.globex]) {
      const response = await fetch(`${server.url}/ag-ui/default/threads/${agent.threadId}/events`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: 'session_not_found' });
    }
    // Bob's run on alice's thread id finds it taken: as missing, nothing written.
    const intruder = agentFor('default', keys.bob, agent.threadId);
    say(intruder, 'let me in');
    await expect(run(intruder)).rejects.toMatchObject({ status: 404 });
    expect(await count('sessions')).toBe(before);
    // Another tenant's same thread id is its own thread.
    const elsewhere = agentFor('default', keys.globex, agent.threadId);
    say(elsewhere, 'mine');
    await run(elsewhere);
    expect(await count('ag_ui_threads where thread_id = $1', [agent.threadId])).toBe(2);
  });

  it("shows the model's reasoning to the callers who ask, around the reply, and re-opens it on resume", async () => {
    const reasoningText = 'The user asks for 2+2. That is 4.';
    // Asked for: the reasoning streams as a reasoning message in its span, before the reply.
    const asking = agentFor('thinker', keys.alice, undefined, '?include=reasoning');
    say(asking, 'what is 2+2?');
    const shown = await run(asking);
    const order = types(shown.events).filter(
      (type) => type.startsWith('REASONING_') || type.startsWith('TEXT_MESSAGE_'),
    );
    expect(order[0]).toBe('REASONING_START');
    expect(order.slice(-4)).toEqual([
      'REASONING_END',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
    ]);
    expect(order).toContain('REASONING_MESSAGE_START');
    expect(order).toContain('REASONING_MESSAGE_END');
    expect(asking.messages.slice(-2)).toMatchObject([
      { role: 'reasoning', content: reasoningText },
      { role: 'assistant', content: '2 + 2 = 4.' },
    ]);

    // Not asked for: the run shows that it reasons, never what.
    const quiet = agentFor('thinker', keys.alice);
    say(quiet, 'what is 2+2?');
    const bare = await run(quiet);
    expect(types(bare.events).filter((type) => type.startsWith('REASONING_'))).toEqual([
      'REASONING_START',
      'REASONING_END',
    ]);
    expect(JSON.stringify(bare.events)).not.toContain('The user asks');
    expect(quiet.messages.map((message) => message.role)).toEqual(['user', 'assistant']);
    const untold = await readThread('thinker', quiet.threadId, '0', (events) =>
      events.some((event) => event.type === 'RUN_FINISHED'),
    );
    expect(JSON.stringify(untold.events)).not.toContain('The user asks');

    // A reconnect inside the reasoning re-opens its span and message with the same ids,
    // through the client's own checks, and the text goes on where it stopped.
    const sessionId = await sessionOf(asking.threadId);
    const fragments = (await readEvents(server.db, sessionId, 0, 1000)).flatMap((event) =>
      event.type === 'reasoning_delta' ? [{ sequence: event.sequence, delta: event.delta }] : [],
    );
    const cut = fragments[0] as { sequence: number; delta: string };
    const resumed = await readThread(
      'thinker',
      asking.threadId,
      String(cut.sequence),
      (events) => events.some((event) => event.type === 'RUN_FINISHED'),
      '?include=reasoning',
    );
    const span = shown.events.find(
      (event) => event.type === EventType.REASONING_START,
    ) as unknown as {
      messageId: string;
    };
    const thought = asking.messages.at(-2)?.id;
    expect(resumed.events.slice(0, 3)).toMatchObject([
      { type: 'RUN_STARTED' },
      { type: 'REASONING_START', messageId: span.messageId },
      { type: 'REASONING_MESSAGE_START', messageId: thought, role: 'reasoning' },
    ]);
    const rest = resumed.events
      .filter((event) => event.type === 'REASONING_MESSAGE_CONTENT')
      .map((event) => event.delta)
      .join('');
    expect(cut.delta + rest).toBe(reasoningText);
    const watcher = agentFor('thinker', keys.alice, asking.threadId);
    watcher.query = '?include=reasoning';
    watcher.lastEventId = String(cut.sequence);
    await watchThread(watcher, 1);
    expect(watcher.messages).toMatchObject([
      { id: thought, role: 'reasoning', content: rest },
      { role: 'assistant', content: '2 + 2 = 4.' },
    ]);
  });

  it("starts a thread's stream without a cursor with a snapshot of its messages, then follows it live", async () => {
    const agent = agentFor('helper', keys.alice);
    say(agent, '/tool calculator {"expression": "6*7"}');
    await run(agent);
    say(agent, 'thanks');
    await run(agent);

    // What a replay of every run leaves a client with.
    const replay = agentFor('helper', keys.alice, agent.threadId);
    replay.lastEventId = '0';
    await watchThread(replay, 2);

    const watcher = agentFor('helper', keys.alice, agent.threadId);
    const seen: BaseEvent[] = [];
    const connected = watcher.connectAgent({}, { onEvent: ({ event }) => void seen.push(event) });
    const finished = () => seen.filter((event) => event.type === EventType.RUN_FINISHED).length;
    await until(
      async () => finished(),
      (count) => count >= 1,
      'the snapshot',
    );
    expect(types(seen)).toEqual(['RUN_STARTED', 'MESSAGES_SNAPSHOT', 'RUN_FINISHED']);
    const snapshot = (seen[1] as unknown as { messages: { role: string; content?: unknown }[] })
      .messages;
    expect(snapshot.filter((message) => message.role === 'user')).toMatchObject([
      { content: '/tool calculator {"expression": "6*7"}' },
      { content: 'thanks' },
    ]);
    // The runs' messages are the replay's: the same ids, tool calls and results.
    expect(snapshot.filter((message) => message.role !== 'user')).toEqual(replay.messages);
    expect(watcher.messages).toEqual(snapshot);

    // A new run streams live, after the snapshot, without any earlier run again.
    say(agent, 'one more');
    const next = await run(agent);
    await until(
      async () => finished(),
      (count) => count >= 2,
      'the live run',
    );
    await watcher.detachActiveRun();
    watcher.abortRun();
    await connected;
    const runIds = seen
      .filter((event) => event.type === EventType.RUN_STARTED)
      .map((event) => (event as unknown as { runId: string }).runId);
    expect(runIds.slice(1)).toEqual([(next.events[0] as unknown as { runId: string }).runId]);
    expect(watcher.messages.slice(0, snapshot.length)).toEqual(snapshot);
    expect(watcher.messages.slice(snapshot.length)).toMatchObject([
      { role: 'assistant', content: 'You said: one more' },
    ]);

    // A run open when the stream starts: the snapshot stops before it, and the run streams
    // from its start, then live to its end.
    const stallId = `open_${Date.now()}`;
    say(agent, '/stall forever');
    const stalling = run(agent, { runId: stallId });
    const sessionId = await sessionOf(agent.threadId);
    await until(
      async () =>
        (await readEvents(server.db, sessionId, 0, 1000)).some(
          (event) => event.type === 'text_delta' && event.turn_id === stallId,
        ),
      Boolean,
      'the open run to stream',
    );
    const cancels: Promise<Response>[] = [];
    const open = await readThread('helper', agent.threadId, null, (events) => {
      if (cancels.length === 0 && events.some((event) => event.type === 'TEXT_MESSAGE_CONTENT')) {
        const cancel = fetch(
          `${server.url}/api/v1/chat/sessions/${sessionId}/turns/${stallId}/cancel`,
          {
            method: 'POST',
            headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
            body: JSON.stringify({ command_id: `cancel_${stallId}` }),
          },
        );
        cancels.push(cancel);
      }
      return events.some((event) => event.type === 'RUN_FINISHED' && event.runId === stallId);
    });
    expect((await Promise.all(cancels)).map((response) => response.status)).toEqual([200]);
    await stalling;
    const openSnapshot = open.events[1] as { messages: { role: string; content?: unknown }[] };
    expect(openSnapshot.messages.at(-1)).toMatchObject({ role: 'user', content: '/stall forever' });
    expect(
      open.events.filter((event) => event.type === 'RUN_STARTED').map((event) => event.runId),
    ).toEqual([open.events[0]?.runId, stallId]);
    expect(
      open.events
        .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
        .map((event) => event.delta)
        .join(''),
    ).toBe('You said: ');
    expect(open.events.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'cancelled' },
    });
  });

  it("takes the client's context into its run's turn only", async () => {
    const agent = agentFor('default', keys.alice);
    say(agent, 'hi');
    await run(agent, { context: [{ description: 'How to sign', value: '/sign from-context' }] });
    expect(agent.messages.at(-1)).toMatchObject({
      content: 'You said: hi\n(signed: from-context)',
    });
    say(agent, 'again');
    await run(agent);
    expect(agent.messages.at(-1)).toMatchObject({ content: 'You said: again' });
  });

  it('refuses bad input with a code, writing nothing', async () => {
    const before = [await count('turns'), await count('sessions'), await count('ag_ui_threads')];
    const post = (name: string, body: unknown) =>
      fetch(`${server.url}/ag-ui/${name}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const base = { threadId: randomUUID(), runId: 'run_bad', tools: [], context: [] };
    const cases: [string, unknown, number, string][] = [
      [
        'nobody',
        { ...base, messages: [{ id: 'm', role: 'user', content: 'hi' }] },
        404,
        'unknown_agent',
      ],
      ['default', { ...base, messages: [] }, 400, 'invalid_request'],
      [
        'default',
        { ...base, messages: [{ id: 'm', role: 'assistant', content: 'hi' }] },
        400,
        'invalid_request',
      ],
      [
        'default',
        { ...base, messages: [{ id: 'm', role: 'user', content: '  ' }] },
        400,
        'empty_message',
      ],
      [
        'default',
        { ...base, runId: 'not a key!', messages: [{ id: 'm', role: 'user', content: 'hi' }] },
        400,
        'invalid_request',
      ],
      [
        'default',
        {
          ...base,
          messages: [],
          resume: [{ interruptId: 'req_none', status: 'resolved', payload: true }],
        },
        404,
        'session_not_found',
      ],
      [
        'default',
        {
          ...base,
          messages: [{ id: 'm', role: 'user', content: 'hi' }],
          context: [{ description: 'too much', value: 'x'.repeat(16 * 1024) }],
        },
        400,
        'invalid_request',
      ],
      [
        'default',
        { ...base, messages: [{ id: 'm', role: 'user', content: 'hi' }], context: [{ value: 1 }] },
        400,
        'invalid_request',
      ],
      [
        'default?include=Reasoning!',
        { ...base, messages: [{ id: 'm', role: 'user', content: 'hi' }] },
        400,
        'invalid_request',
      ],
      // A state: of an agent that keeps none, not an object, not the schema's.
      ...[
        ['default', { step: 1 }],
        ['ledger', [1]],
        ['ledger', 'step'],
        ['ledger', { step: 'one' }],
        ['ledger', { step: 1, other: true }],
        ['ledger', { note: 'a\u0000b' }],
      ].map(([name, state]): [string, unknown, number, string] => [
        name as string,
        { ...base, messages: [{ id: 'm', role: 'user', content: 'hi' }], state },
        400,
        'invalid_request',
      ]),
    ];
    for (const [name, body, status, code] of cases) {
      const response = await post(name, body);
      expect(response.status, code).toBe(status);
      expect(await response.json(), code).toMatchObject({ error: code });
    }
    // The context's limit is named.
    const tooMuch = await post('default', {
      ...base,
      messages: [{ id: 'm', role: 'user', content: 'hi' }],
      context: [{ description: 'd', value: 'x'.repeat(16 * 1024) }],
    });
    expect(await tooMuch.json()).toMatchObject({
      error: 'invalid_request',
      field: 'context',
      limit_bytes: 16 * 1024,
    });
    const badState = await post('ledger', {
      ...base,
      messages: [{ id: 'm', role: 'user', content: 'hi' }],
      state: { step: 'one' },
    });
    expect(await badState.json()).toMatchObject({ error: 'invalid_request', field: 'state' });
    const cursor = await fetch(
      `${server.url}/ag-ui/default/threads/${randomUUID()}/events?after=x`,
      {
        headers: { authorization: `Bearer ${keys.alice}` },
      },
    );
    expect(cursor.status).toBe(404);
    const nul = await fetch(`${server.url}/ag-ui/default/threads/ab%00cd/events`, {
      headers: { authorization: `Bearer ${keys.alice}` },
    });
    expect(nul.status).toBe(400);
    expect(await nul.json()).toMatchObject({ error: 'invalid_request' });
    expect([await count('turns'), await count('sessions'), await count('ag_ui_threads')]).toEqual(
      before,
    );
  });
});
