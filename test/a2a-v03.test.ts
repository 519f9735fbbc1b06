import { Role, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replyOf, sendRequest, streamedReply, userMessage } from './support/a2aMessages.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { startTestServer, type TestServer } from './support/server.js';

// A2A 0.3 clients (docs/protocols.md, "A2A 0.3 clients"): the SDK's v0.3 compat client
// (`legacyCompat`, its `LegacyJsonRpcTransport`) on loopback, against the same A2A server
// as 1.0's clients (test/a2a.test.ts).

let server: TestServer;
let sink: Server;
let sinkUrl = '';
/** The push notifications the receiver took. */
const sunk: { headers: IncomingHttpHeaders; body: any }[] = [];

/** What went over the wire: each JSON-RPC method called and the A2A-Version it was sent with. */
const wire: { method: string; version: string | null }[] = [];

beforeAll(async () => {
  // Push configs need a host the operator allows: a receiver that takes every POST.
  sink = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      sunk.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString()) });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  server = await startTestServer(
    {
      server: { blocking_wait_ms: 1500 },
      a2a: {
        push_notifications: { allow_hosts: [new URL(sinkUrl).host], allow_private: true },
      },
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gus', roles: [] },
        ],
      },
      agents: {
        default: { model: 'demo/echo', greeting: 'Hello from the front desk.' },
        careful: { model: 'demo/echo', tools: { calculator: 'approve' } },
      },
    },
    { K_ALICE: 'alice-key', K_GLOBEX: 'globex-key' },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
  await new Promise((resolve) => sink?.close(resolve));
});

/** `fetch` with a Parley API key that notes each JSON-RPC call it carries. */
function keyed(key: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    if (typeof init?.body === 'string') {
      const method = (JSON.parse(init.body) as { method: string }).method;
      wire.push({ method, version: headers.get('a2a-version') });
    }
    return fetch(input, { ...init, headers });
  };
}

/** The SDK's client with `legacyCompat`, from the agent's 0.3 card: it speaks 0.3. */
async function v03ClientFor(key: string, agent: string): Promise<Client> {
  const fetchImpl = keyed(key);
  const legacyCompat = { enabled: true };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat }),
    }),
  );
  return factory.createFromUrl(`${server.url}/a2a/${agent}/v0.3/.well-known/agent-card.json`, '');
}

function stateOf(event: StreamResponse | undefined): TaskState | undefined {
  const payload = event?.payload;
  if (payload?.$case === 'statusUpdate') return payload.value.status?.state;
  return payload?.$case === 'task' ? payload.value.status?.state : undefined;
}

/** A raw 0.3 call (no A2A-Version unless given), as a client of 0.3 alone sends it. */
async function rpc(
  key: string,
  agent: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; text: string }> {
  const response = await fetch(`${server.url}/a2a/${agent}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const json = response.headers.get('content-type')?.startsWith('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => JSON.parse(line.slice(6)))
    : JSON.parse(text);
  return { status: response.status, body: json, text };
}

async function counts(): Promise<string> {
  const found = await server.db.query<{ turns: number; configs: number }>(
    `select (select count(*)::int from turns) as turns,
            (select count(*)::int from a2a_push_configs) as configs`,
  );
  return JSON.stringify(found.rows[0]);
}

describe('A2A 0.3 clients (the SDK’s v0.3 compat client)', () => {
  it('finds the agent through its 0.3 card; the 1.0 card lists the 0.3 interface', async () => {
    const get = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}${path}`, { headers: { authorization: 'Bearer alice-key', ...headers } });
    const v03 = (await (await get('/a2a/default/v0.3/.well-known/agent-card.json')).json()) as any;
    expect(v03).toMatchObject({
      protocolVersion: '0.3.0',
      name: 'default',
      description: 'Hello from the front desk.',
      url: `${server.url}/a2a/default`,
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true, pushNotifications: true },
      securitySchemes: { bearer: { type: 'http', scheme: 'Bearer' } },
      security: [{ bearer: [] }],
    });
    expect(v03.supportedInterfaces).toBeUndefined();
    // The well-known card: 0.3's for an A2A-Version of 0.3, else 1.0's (listing both).
    const asked = await get('/a2a/default/.well-known/agent-card.json', { 'a2a-version': '0.3' });
    expect(asked.headers.get('vary')).toMatch(/A2A-Version/i);
    expect(await asked.json()).toEqual(v03);
    const v1 = (await (await get('/a2a/default/.well-known/agent-card.json')).json()) as any;
    expect(v1.url).toBeUndefined();
    expect(v1.supportedInterfaces.map((entry: any) => entry.protocolVersion)).toEqual([
      '1.0',
      '0.3',
    ]);
    expect((await fetch(`${server.url}/a2a/default/v0.3/.well-known/agent-card.json`)).status).toBe(
      401,
    );
    expect((await get('/a2a/nobody/v0.3/.well-known/agent-card.json')).status).toBe(404);

    const client = await v03ClientFor('alice-key', 'default');
    expect(client.protocolVersion).toBe('0.3');
  });

  it('sends (blocking), gets and continues a task; a retried messageId is one task', async () => {
    const client = await v03ClientFor('alice-key', 'default');
    wire.length = 0;
    const message = userMessage('hello from 0.3');
    const task = (await client.sendMessage(sendRequest(message))) as Task;
    expect(wire).toEqual([{ method: 'message/send', version: '0.3' }]);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(task)).toBe('You said: hello from 0.3');
    expect(task.history.map((entry) => entry.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);

    const before = await counts();
    const again = (await client.sendMessage(sendRequest(message))) as Task;
    expect(again.id).toBe(task.id);
    expect(await counts()).toBe(before);

    const next = (await client.sendMessage(
      sendRequest(userMessage('and again', { contextId: task.contextId })),
    )) as Task;
    expect(next.contextId).toBe(task.contextId);
    expect(next.id).not.toBe(task.id);
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: 0 });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(got.history).toEqual([]);
    expect(replyOf(got)).toBe('You said: hello from 0.3');

    // A client of 0.3 alone sends no A2A-Version at all: the same answer.
    const bare = new LegacyJsonRpcTransport({
      endpoint: `${server.url}/a2a/default`,
      fetchImpl: keyed('alice-key'),
    });
    wire.length = 0;
    expect(replyOf(await bare.getTask({ tenant: '', id: task.id, historyLength: 0 }))).toBe(
      replyOf(got),
    );
    expect(wire).toEqual([{ method: 'tasks/get', version: null }]);
    const raw = await rpc('alice-key', 'default', {
      jsonrpc: '2.0',
      id: 'g',
      method: 'tasks/get',
      params: { id: task.id },
    });
    expect(raw.body.result).toMatchObject({
      kind: 'task',
      id: task.id,
      status: { state: 'completed', message: { kind: 'message', role: 'agent' } },
      artifacts: [{ artifactId: 'reply', parts: [{ kind: 'text' }] }],
      history: [
        { kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'hello from 0.3' }] },
        { kind: 'message', role: 'agent', taskId: task.id, contextId: task.contextId },
      ],
    });
  });

  it('streams the task and its updates in 0.3’s kinds, `final` on the last', async () => {
    const client = await v03ClientFor('alice-key', 'default');
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(sendRequest(userMessage('stream 0.3')))) {
      events.push(event);
    }
    expect(events[0]?.payload?.$case).toBe('task');
    expect(stateOf(events.at(-1))).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(events.map(stateOf)).toContain(TaskState.TASK_STATE_WORKING);
    expect(streamedReply(events)).toBe('You said: stream 0.3');

    const raw = await rpc('alice-key', 'default', {
      jsonrpc: '2.0',
      id: 's',
      method: 'message/stream',
      params: {
        message: {
          kind: 'message',
          messageId: `raw-stream-${Date.now()}`,
          role: 'user',
          parts: [{ kind: 'text', text: 'raw stream' }],
        },
      },
    });
    const results = (raw.body as any[]).map((frame) => {
      expect(frame.id).toBe('s');
      return frame.result;
    });
    expect(results[0]).toMatchObject({ kind: 'task', status: { state: 'submitted' } });
    expect(new Set(results.slice(1).map((result) => result.kind))).toEqual(
      new Set(['status-update', 'artifact-update']),
    );
    const statuses = results.filter((result) => result.kind === 'status-update');
    expect(statuses.map((status) => status.final)).toEqual([
      ...statuses.slice(1).map(() => false),
      true,
    ]);
    expect(statuses.at(-1).status.state).toBe('completed');
  });

  it('cancels a task; a cancelled task is not cancelable again', async () => {
    const client = await v03ClientFor('alice-key', 'default');
    wire.length = 0;
    const started = (await client.sendMessage(
      sendRequest(userMessage('/stall a long wait'), true),
    )) as Task;
    expect(started.status?.state).not.toBe(TaskState.TASK_STATE_COMPLETED);
    const cancelled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(wire.map((call) => call.method)).toEqual(['message/send', 'tasks/cancel']);
    const again = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined }).then(
      () => null,
      (caught: unknown) => caught as Error,
    );
    expect(again?.name).toBe('TaskNotCancelableError');
  });

  it('asks for input on an approval, answered by the next message; a resubscribe follows it', async () => {
    const client = await v03ClientFor('alice-key', 'careful');
    const waiting = (await client.sendMessage(
      sendRequest(userMessage('/tool calculator {"expression": "2+3"}')),
    )) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const data = waiting.status?.message?.parts.find((part) => part.content?.$case === 'data');
    expect(data?.content?.$case === 'data' ? data.content.value : null).toMatchObject({
      kind: 'approval',
      tool: 'calculator',
      arguments: { expression: '2+3' },
    });

    wire.length = 0;
    const subscription = client
      .resubscribeTask({ tenant: '', id: waiting.id })
      [Symbol.asyncIterator]();
    const opening = await subscription.next();
    expect(wire.map((call) => call.method)).toEqual(['tasks/resubscribe']);
    const followed: StreamResponse[] = opening.done ? [] : [opening.value];
    const following = (async () => {
      for (let next = await subscription.next(); !next.done; next = await subscription.next()) {
        followed.push(next.value);
      }
    })();

    const before = await counts();
    const vague = await client
      .sendMessage(sendRequest(userMessage('maybe', { taskId: waiting.id })))
      .then(
        () => null,
        (caught: unknown) => caught as Error,
      );
    expect(vague?.message).toMatch(/approve/);
    const done = (await client.sendMessage(
      sendRequest(userMessage('approve', { taskId: waiting.id, contextId: waiting.contextId })),
    )) as Task;
    expect(done.id).toBe(waiting.id);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(done)).toContain('5');
    expect(JSON.parse(await counts()).turns).toBe(JSON.parse(before).turns);

    await following;
    expect(stateOf(followed[0])).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(stateOf(followed.at(-1))).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(streamedReply(followed)).toBe(replyOf(done));

    // A send's stream ends at the input request: its status update is the final one.
    const raw = await rpc('alice-key', 'careful', {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/stream',
      params: {
        message: {
          kind: 'message',
          messageId: `raw-ask-${Date.now()}`,
          role: 'user',
          parts: [{ kind: 'text', text: '/tool calculator {"expression": "1+1"}' }],
        },
      },
    });
    const last = (raw.body as any[]).at(-1).result;
    expect(last).toMatchObject({ kind: 'status-update', final: true });
    expect(last.status.state).toBe('input-required');
    const answered = await rpc('alice-key', 'careful', {
      jsonrpc: '2.0',
      id: 2,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: `raw-answer-${Date.now()}`,
          role: 'user',
          taskId: last.taskId,
          parts: [{ kind: 'data', data: { approved: false, reason: 'not now' } }],
        },
        configuration: { blocking: true },
      },
    });
    expect(answered.body.result).toMatchObject({ kind: 'task', id: last.taskId });
    expect(answered.body.result.status.state).not.toBe('input-required');
  });

  it('keeps push configs with the 0.3 methods (set, get, list, delete)', async () => {
    const client = await v03ClientFor('alice-key', 'default');
    const task = (await client.sendMessage(sendRequest(userMessage('push me')))) as Task;
    wire.length = 0;
    const made = await client.createTaskPushNotificationConfig({
      tenant: '',
      id: 'hook-1',
      taskId: task.id,
      url: `${sinkUrl}/hook`,
      token: 'tok',
      authentication: { scheme: 'Bearer', credentials: 'receiver-secret' },
    });
    expect(made).toMatchObject({ id: 'hook-1', taskId: task.id, token: 'tok' });
    expect(made.authentication).toMatchObject({ scheme: 'Bearer', credentials: 'receiver-secret' });
    const got = await client.getTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      id: 'hook-1',
    });
    expect(got.url).toBe(`${sinkUrl}/hook`);
    const listed = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: task.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(listed.configs.map((config) => config.id)).toEqual(['hook-1']);
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'hook-1' });
    expect(wire.map((call) => call.method)).toEqual([
      'tasks/pushNotificationConfig/set',
      'tasks/pushNotificationConfig/get',
      'tasks/pushNotificationConfig/list',
      'tasks/pushNotificationConfig/delete',
    ]);
    const empty = await rpc('alice-key', 'default', {
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/pushNotificationConfig/list',
      params: { id: task.id },
    });
    expect(empty.body.result).toEqual([]);
  });

  it('pushes a 0.3 config’s notifications in 0.3’s shape', async () => {
    const sent = await rpc('alice-key', 'default', {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          messageId: `v03-push-${Date.now()}`,
          role: 'user',
          parts: [{ kind: 'text', text: 'push me in 0.3' }],
        },
        configuration: {
          blocking: true,
          pushNotificationConfig: { url: `${sinkUrl}/v03`, token: 'tok-v03' },
        },
      },
    });
    const taskId = sent.body.result.id as string;
    const mine = () =>
      sunk.filter((push) => push.headers['x-a2a-notification-token'] === 'tok-v03');
    await until(
      () => mine().map((push) => push.body.status?.state),
      (states) => states.includes('completed'),
      'the completed notification',
    );
    expect(mine().map((push) => [push.body.status.state, push.body.final])).toEqual([
      ['working', false],
      ['completed', true],
    ]);
    for (const push of mine()) {
      expect(push.headers['content-type']).toBe('application/json');
      expect(push.body).toMatchObject({ kind: 'status-update', taskId });
    }
  });

  it("refuses bad 0.3 input with A2A's codes, fields named as sent, writing nothing", async () => {
    const client = await v03ClientFor('alice-key', 'default');
    const mine = (await client.sendMessage(sendRequest(userMessage('mine')))) as Task;
    const before = await counts();
    const send = (message: unknown, configuration?: unknown) => ({
      jsonrpc: '2.0',
      id: 3,
      method: 'message/send',
      params: { message, ...(configuration === undefined ? {} : { configuration }) },
    });
    const message = (parts: unknown[], more = {}) => ({
      kind: 'message',
      messageId: 'bad-1',
      role: 'user',
      parts,
      ...more,
    });
    const text = [{ kind: 'text', text: 'hi' }];
    const cases: [unknown, number, number, string?][] = [
      [send(message([{ text: 'no kind' }])), 400, -32602, 'params.message.parts.0.kind'],
      [send(message(text, { role: 'agent' })), 400, -32602, 'params.message.role'],
      [send(message([])), 400, -32602, 'params.message.parts'],
      [send('not a message'), 400, -32602, 'params.message'],
      [send(message([{ kind: 'file', file: { uri: 'https://example.com/a.png' } }])), 415, -32005],
      [send(message(text), { blocking: 'yes' }), 400, -32602, 'params.configuration.blocking'],
      [
        send(message(text), { pushNotificationConfig: { url: 'https://example.com/hook' } }),
        400,
        -32602,
        'params.configuration.pushNotificationConfig.url',
      ],
      [
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tasks/pushNotificationConfig/set',
          params: { taskId: mine.id },
        },
        400,
        -32602,
        'params.pushNotificationConfig.url',
      ],
      [
        { jsonrpc: '2.0', id: 1, method: 'tasks/pushNotificationConfig/get', params: {} },
        400,
        -32602,
        'params.id',
      ],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'nope' } }, 404, -32001],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/list', params: {} }, 400, -32601],
      [{ jsonrpc: '2.0', id: 1, method: 'agent/getAuthenticatedExtendedCard' }, 400, -32004],
    ];
    for (const [body, status, code, field] of cases) {
      const answer = await rpc('alice-key', 'default', body);
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.body.error.code, JSON.stringify(body)).toBe(code);
      if (field) expect(answer.body.error.data[0].metadata.field, JSON.stringify(body)).toBe(field);
    }
    // A 0.3 method with 1.0's version: refused, -32009.
    const versioned = await rpc('alice-key', 'default', send(message(text)), {
      'a2a-version': '1.0',
    });
    expect(versioned.body.error.code).toBe(-32009);
    // Another tenant's task is missing, exactly as a task that does not exist.
    const foreign = await rpc('globex-key', 'default', {
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/get',
      params: { id: mine.id },
    });
    const absent = await rpc('globex-key', 'default', {
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/get',
      params: { id: 'a2a_nothing_here' },
    });
    expect(foreign.status).toBe(404);
    expect(foreign.text.replace(mine.id, '<id>')).toBe(
      absent.text.replace('a2a_nothing_here', '<id>'),
    );
    expect(await counts()).toBe(before);
  });
});
