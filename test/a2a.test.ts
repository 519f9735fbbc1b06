import {
  Role,
  TaskState,
  type ListTasksRequest,
  type Message,
  StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pushPoster } from '../src/api/a2a/pushNotifications.js';
import { parseHostRule, type HostRule } from '../src/tools/httpFetch/hosts.js';
import { MemoryEffects } from '../src/tools/memory/effects.js';
import { builtInTools } from '../src/tools/registry.js';
import type { CallScope } from '../src/tools/types.js';
import { replyOf, sendRequest, streamedReply, userMessage } from './support/a2aMessages.js';
import { checkJournalInvariants } from './support/invariants.js';
import { startTestServer, type TestServer } from './support/server.js';

// A2A (docs/protocols.md): Parley's agents as A2A servers, driven by the official
// `@a2a-js/sdk` client on loopback, on the engine the suite runs on.

let server: TestServer;

/** A push receiver on loopback: every POST it got, in order; `failFirst` tokens get a 503 once per delivery. */
interface Pushed {
  headers: IncomingHttpHeaders;
  body: any;
}
const pushed: Pushed[] = [];
const failFirst = new Set<string>();
const failedOnce = new Set<string>();
let waiters: (() => void)[] = [];
let receiver: Server;
let receiverUrl = '';

/** Resolves once the receiver holds what `ready` looks for (checked on every POST). */
function received(ready: (all: Pushed[]) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (ready(pushed)) resolve();
      else waiters.push(check);
    };
    check();
  });
}

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const token = String(request.headers['x-a2a-notification-token'] ?? '');
      const id = String(request.headers['webhook-id']);
      if (failFirst.has(token) && !failedOnce.has(id)) {
        failedOnce.add(id);
        response.writeHead(503).end();
        return;
      }
      pushed.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString()) });
      response.writeHead(200).end();
      const pending = waiters;
      waiters = [];
      for (const waiter of pending) waiter();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  server = await startTestServer(
    {
      server: { blocking_wait_ms: 1500 },
      a2a: {
        push_notifications: {
          allow_hosts: [new URL(receiverUrl).host],
          allow_private: true,
          retry_base_ms: 10,
        },
      },
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gus', roles: [] },
          { key_env: 'K_LEAD', tenant: 'acme', user: 'lea', roles: ['lead'] },
        ],
      },
      agents: {
        default: { model: 'demo/echo', greeting: 'Hello from the front desk.' },
        careful: { model: 'demo/echo', tools: { calculator: 'approve' } },
        curious: { model: 'demo/echo', tools: { ask_user: 'allow' } },
        lister: { model: 'demo/echo' },
      },
    },
    { K_ALICE: 'alice-key', K_GLOBEX: 'globex-key', K_LEAD: 'lead-key' },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
  await new Promise((resolve) => receiver?.close(resolve));
});

/** `fetch` that sends a Parley API key, as the SDK's resolver and transport take it. */
function keyed(key: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
}

async function clientFor(key: string, agent: string, at = server): Promise<Client> {
  const fetchImpl = keyed(key);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(`${at.url}/a2a/${agent}/.well-known/agent-card.json`, '');
}

function textOf(message: Message | undefined): string {
  return (message?.parts ?? [])
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('');
}

async function rpc(
  key: string | null,
  agent: string,
  body: unknown,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}/a2a/${agent}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function turnCount(): Promise<number> {
  const found = await server.db.query<{ n: number }>('select count(*)::int as n from turns');
  return found.rows[0]?.n ?? 0;
}

describe('A2A with the official @a2a-js/sdk client', () => {
  it("serves each agent's card (with the key) and redirects the endpoint to it", async () => {
    const response = await fetch(`${server.url}/a2a/default/.well-known/agent-card.json`, {
      headers: { authorization: 'Bearer alice-key' },
    });
    expect(response.status).toBe(200);
    const card = (await response.json()) as Record<string, any>;
    expect(card.name).toBe('default');
    expect(card.description).toBe('Hello from the front desk.');
    expect(card.supportedInterfaces[0]).toMatchObject({
      url: `${server.url}/a2a/default`,
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
    });
    expect(card.capabilities).toMatchObject({ streaming: true });
    expect(card.skills).toHaveLength(1);
    expect(card.defaultInputModes).toEqual(['text/plain']);

    const redirect = await fetch(`${server.url}/a2a/default`, {
      headers: { authorization: 'Bearer alice-key' },
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('/a2a/default/.well-known/agent-card.json');

    // Without a key: 401; an agent the tenant does not have: 404.
    expect((await fetch(`${server.url}/a2a/default/.well-known/agent-card.json`)).status).toBe(401);
    const missing = await fetch(`${server.url}/a2a/nobody/.well-known/agent-card.json`, {
      headers: { authorization: 'Bearer globex-key' },
    });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: string }).error).toBe('unknown_agent');
  });

  it('answers a blocking send with the completed task: the reply as artifact and message', async () => {
    const client = await clientFor('alice-key', 'default');
    const message = userMessage('hello there');
    const task = (await client.sendMessage(sendRequest(message))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(task)).toBe('You said: hello there');
    expect(textOf(task.status?.message)).toBe('You said: hello there');
    expect(task.history.map((entry) => entry.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);

    // The same messageId again is the same task, admitted once.
    const before = await turnCount();
    const again = (await client.sendMessage(sendRequest(message))) as Task;
    expect(again.id).toBe(task.id);
    expect(await turnCount()).toBe(before);

    // contextId continues the session; GetTask answers from the journal.
    const next = (await client.sendMessage(
      sendRequest(userMessage('and again', { contextId: task.contextId })),
    )) as Task;
    expect(next.contextId).toBe(task.contextId);
    expect(next.id).not.toBe(task.id);
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: 0 });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(got)).toBe('You said: hello there');
    expect(got.history).toEqual([]);
  });

  it('streams the task, then status and artifact updates whose chunks make the reply', async () => {
    const client = await clientFor('alice-key', 'default');
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(
      sendRequest(userMessage('stream this please')),
    )) {
      events.push(event);
    }
    expect(events[0]?.payload?.$case).toBe('task');
    const states = events
      .filter((event) => event.payload?.$case === 'statusUpdate')
      .map((event) =>
        event.payload?.$case === 'statusUpdate' ? event.payload.value.status?.state : null,
      );
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(states).toContain(TaskState.TASK_STATE_WORKING);
    expect(
      events.filter((event) => event.payload?.$case === 'artifactUpdate').length,
    ).toBeGreaterThan(1);
    expect(streamedReply(events)).toBe('You said: stream this please');
  });

  it('cancels a task durably; a cancelled task is not cancelable again', async () => {
    const client = await clientFor('alice-key', 'default');
    const started = (await client.sendMessage(
      sendRequest(userMessage('/stall a long wait'), true),
    )) as Task;
    const cancelled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const again = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined }).then(
      () => null,
      (caught: unknown) => caught as Error,
    );
    expect(again?.message).toMatch(/ended/);
    const raw = await rpc('alice-key', 'default', {
      jsonrpc: '2.0',
      id: 7,
      method: 'CancelTask',
      params: { id: started.id },
    });
    expect(raw.body.error.code).toBe(-32002);
  });

  it('asks for input on an approval, answered by the next message; a resubscribe follows it', async () => {
    const client = await clientFor('alice-key', 'careful');
    const waiting = (await client.sendMessage(
      sendRequest(userMessage('/tool calculator {"expression": "2+3"}')),
    )) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const asked = waiting.status?.message;
    expect(textOf(asked)).toContain('calculator');
    const data = asked?.parts.find((part) => part.content?.$case === 'data');
    expect(data?.content?.$case === 'data' ? data.content.value : null).toMatchObject({
      kind: 'approval',
      tool: 'calculator',
      arguments: { expression: '2+3' },
      arguments_digest: expect.stringMatching(/^[0-9a-f]{64}$/),
    });

    // A resubscribe replays the task as it stands, then follows it to its end: its first
    // event is read before the answer, so it is attached while the task waits.
    const subscription = client
      .resubscribeTask({ tenant: '', id: waiting.id })
      [Symbol.asyncIterator]();
    const opening = await subscription.next();
    const followed: StreamResponse[] = opening.done ? [] : [opening.value];
    const following = (async () => {
      for (let next = await subscription.next(); !next.done; next = await subscription.next()) {
        followed.push(next.value);
      }
    })();

    // Not an answer: neither approve nor reject, nothing written.
    const before = await turnCount();
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
    expect(await turnCount()).toBe(before);

    await following;
    expect(followed[0]?.payload?.$case).toBe('task');
    const first = followed[0]?.payload?.$case === 'task' ? followed[0].payload.value : null;
    expect(first?.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(streamedReply(followed)).toBe(replyOf(done));
    const last = followed.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' ? last.value.status?.state : null).toBe(
      TaskState.TASK_STATE_COMPLETED,
    );
    // An ended task is not subscribed to: GetTask shows it.
    const ended = await rpc('alice-key', 'careful', {
      jsonrpc: '2.0',
      id: 'x',
      method: 'SubscribeToTask',
      params: { id: waiting.id },
    });
    expect(ended.body.error.code).toBe(-32004);
  });

  it('pushes every state change of a task to its configs, in order, with the token', async () => {
    const client = await clientFor('alice-key', 'careful');
    const card = await client.getAgentCard();
    expect(card.capabilities?.pushNotifications).toBe(true);
    const hook = `${receiverUrl}/hook`;
    failFirst.add('tok-send');
    // A config given with the message: every change of the task from its start.
    const request = sendRequest(userMessage('/tool calculator {"expression": "4+5"}'));
    request.configuration = {
      ...request.configuration!,
      taskPushNotificationConfig: {
        tenant: '',
        id: 'on-send',
        taskId: '',
        url: hook,
        token: 'tok-send',
        authentication: undefined,
      },
    };
    const waiting = (await client.sendMessage(request)) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

    // One made on the running task: its first notification is the task as it stands.
    const created = await client.createTaskPushNotificationConfig({
      tenant: '',
      id: 'later',
      taskId: waiting.id,
      url: hook,
      token: 'tok-later',
      authentication: { scheme: 'Bearer', credentials: 'receiver-secret' },
    });
    expect(created).toMatchObject({
      id: 'later',
      taskId: waiting.id,
      url: hook,
      token: 'tok-later',
    });
    const listed = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: waiting.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(listed.configs.map((config) => config.id)).toEqual(['on-send', 'later']);
    const got = await client.getTaskPushNotificationConfig({
      tenant: '',
      taskId: waiting.id,
      id: 'later',
    });
    expect(got.authentication).toEqual({ scheme: 'Bearer', credentials: 'receiver-secret' });

    const of = (token: string) =>
      pushed.filter((push) => push.headers['x-a2a-notification-token'] === token);
    const states = (token: string) =>
      of(token).map((push) => push.body.statusUpdate?.status?.state as string);
    await received(() => states('tok-later').includes('TASK_STATE_INPUT_REQUIRED'));
    await client.sendMessage(
      sendRequest(userMessage('approve', { taskId: waiting.id, contextId: waiting.contextId })),
    );
    await received(
      () =>
        states('tok-send').includes('TASK_STATE_COMPLETED') &&
        states('tok-later').includes('TASK_STATE_COMPLETED'),
    );
    expect(states('tok-send')).toEqual([
      'TASK_STATE_WORKING',
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_WORKING',
      'TASK_STATE_COMPLETED',
    ]);
    expect(states('tok-later')).toEqual([
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_WORKING',
      'TASK_STATE_COMPLETED',
    ]);
    for (const push of [...of('tok-send'), ...of('tok-later')]) {
      expect(push.headers['content-type']).toBe('application/a2a+json');
      const update = StreamResponse.fromJSON(push.body).payload;
      expect(update?.$case === 'statusUpdate' ? update.value.taskId : null).toBe(waiting.id);
    }
    for (const push of of('tok-later')) {
      expect(push.headers.authorization).toBe('Bearer receiver-secret');
    }
    expect(of('tok-send')[0]?.headers.authorization).toBeUndefined();
    const completed = of('tok-send').at(-1)?.body.statusUpdate;
    expect(completed.status.message.parts[0].text).toContain('9');
    // A failed POST is retried with the same delivery id; each notification has its own.
    const ids = of('tok-send').map((push) => String(push.headers['webhook-id']));
    expect(new Set(ids).size).toBe(4);
    expect(ids.every((id) => failedOnce.has(id))).toBe(true);

    // Delete: gone from the list; a second delete and a get find nothing.
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: waiting.id, id: 'later' });
    const after = await client.listTaskPushNotificationConfig({
      tenant: '',
      taskId: waiting.id,
      pageSize: 0,
      pageToken: '',
    });
    expect(after.configs.map((config) => config.id)).toEqual(['on-send']);
    const call = (method: string, params: unknown, key = 'alice-key') =>
      rpc(key, 'careful', { jsonrpc: '2.0', id: 7, method, params });
    for (const method of ['GetTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfig']) {
      const missing = await call(method, { taskId: waiting.id, id: 'later' });
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe(-32001);
    }

    // Another tenant's task is a missing task, whatever the method; nothing is stored.
    const configs = async () => (await server.db.query('select 1 from a2a_push_configs')).rowCount;
    const before = await configs();
    const foreign = [
      ['CreateTaskPushNotificationConfig', { taskId: waiting.id, url: hook }],
      ['GetTaskPushNotificationConfig', { taskId: waiting.id, id: 'on-send' }],
      ['ListTaskPushNotificationConfigs', { taskId: waiting.id }],
      ['DeleteTaskPushNotificationConfig', { taskId: waiting.id, id: 'on-send' }],
    ] as const;
    for (const [method, params] of foreign) {
      const refused = await call(method, params, 'globex-key');
      expect(refused.status, method).toBe(404);
      expect(refused.body.error.code, method).toBe(-32001);
      expect(JSON.stringify(refused.body)).not.toContain('tok-send');
    }
    // A host off the operator's list, or a URL with credentials: Invalid params naming
    // the URL, nothing stored.
    for (const url of [
      'https://example.com/hook',
      `${receiverUrl.replace('//', '//user:pw@')}/x`,
    ]) {
      const refused = await call('CreateTaskPushNotificationConfig', {
        taskId: waiting.id,
        url,
        token: 'tok-refused',
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error.code).toBe(-32602);
      expect(refused.body.error.message).toContain(new URL(url).origin);
      expect(JSON.stringify(refused.body)).not.toContain('tok-refused');
      expect(JSON.stringify(refused.body)).not.toContain('user:pw');
    }
    expect(await configs()).toBe(before);
  });

  it('checks a push URL again at send time: a name now resolving inward, a host now off the list', async () => {
    const post = pushPoster(
      {
        allowHosts: [parseHostRule('hooks.example.com') as HostRule],
        allowPrivate: false,
        timeoutMs: 1000,
        maxAttempts: 1,
        retryBaseMs: 10,
      },
      async () => [{ address: '10.0.0.7', family: 4 }],
    );
    const push = {
      delivery_id: 'msg_1',
      push_id: 'push_1',
      session_id: 's',
      sequence: 1,
      payload: {},
      attempts: 0,
      url: 'https://hooks.example.com/x?secret=s3cret',
      token: 'tok',
      auth_scheme: null,
      auth_credentials: null,
      wire: '1.0' as const,
    };
    const signal = new AbortController().signal;
    const inward = await post(push, signal).catch((error: unknown) => error as Error);
    expect((inward as Error).message).toMatch(
      /hooks\.example\.com resolves to an internal address/,
    );
    expect((inward as Error).message).not.toContain('s3cret');
    await expect(post({ ...push, url: 'https://elsewhere.example.com/x' }, signal)).rejects.toThrow(
      /no longer on a2a\.push_notifications\.allow_hosts/,
    );
  });

  it('answers a question with the next message text', async () => {
    const client = await clientFor('alice-key', 'curious');
    const asking = (await client.sendMessage(
      sendRequest(userMessage('/tool ask_user {"question": "Which one?"}')),
    )) as Task;
    expect(asking.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textOf(asking.status?.message)).toContain('Which one?');
    const answered = (await client.sendMessage(
      sendRequest(userMessage('the blue one', { taskId: asking.id })),
    )) as Task;
    expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(answered)).toContain('the blue one');
  });

  it("lists the agent's tasks newest first, page by page, by context and by state", async () => {
    const client = await clientFor('alice-key', 'lister');
    const list = (more: Partial<ListTasksRequest> = {}, at = client) =>
      at.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken: '',
        statusTimestampAfter: undefined,
        ...more,
      });
    const first = (await client.sendMessage(sendRequest(userMessage('one')))) as Task;
    const contextId = first.contextId;
    const second = (await client.sendMessage(
      sendRequest(userMessage('two', { contextId })),
    )) as Task;
    const third = (await client.sendMessage(
      sendRequest(userMessage('three', { contextId })),
    )) as Task;
    const stalled = (await client.sendMessage(
      sendRequest(userMessage('/stall until cancelled'), true),
    )) as Task;
    const ids = (tasks: Task[]) => tasks.map((task) => task.id);

    const page1 = await list({ pageSize: 2 });
    expect(ids(page1.tasks)).toEqual([stalled.id, third.id]);
    expect(page1).toMatchObject({ pageSize: 2, totalSize: 4 });
    expect(page1.nextPageToken).not.toBe('');
    const page2 = await list({ pageSize: 2, pageToken: page1.nextPageToken });
    expect(ids(page2.tasks)).toEqual([second.id, first.id]);
    expect(page2.nextPageToken).toBe('');

    const inContext = await list({ contextId });
    expect(ids(inContext.tasks)).toEqual([third.id, second.id, first.id]);
    // Artifacts only when asked; history trimmed as asked.
    expect(inContext.tasks[0]?.artifacts).toEqual([]);
    const full = await list({ contextId, includeArtifacts: true, historyLength: 1 });
    expect(replyOf(full.tasks[0] as Task)).toBe('You said: three');
    expect(full.tasks[0]?.history).toHaveLength(1);

    const completed = await list({ status: TaskState.TASK_STATE_COMPLETED });
    expect(ids(completed.tasks)).toEqual([third.id, second.id, first.id]);
    const working = await list({ status: TaskState.TASK_STATE_WORKING });
    expect(ids(working.tasks)).toEqual([stalled.id]);
    expect(working.totalSize).toBe(1);

    // Another tenant's agent of the same name lists none of them.
    const globex = await list({}, await clientFor('globex-key', 'lister'));
    expect(globex.tasks).toEqual([]);
    expect(globex.totalSize).toBe(0);

    await client.cancelTask({ tenant: '', id: stalled.id, metadata: undefined });
    const cancelled = await list({ status: TaskState.TASK_STATE_CANCELED });
    expect(ids(cancelled.tasks)).toEqual([stalled.id]);
    expect((await list({ status: TaskState.TASK_STATE_WORKING })).tasks).toEqual([]);
  });

  it("shows another tenant's task, context or agent exactly as a missing one", async () => {
    const alice = await clientFor('alice-key', 'default');
    const task = (await alice.sendMessage(sendRequest(userMessage('mine alone')))) as Task;
    const probes = (id: string, contextId: string) => [
      { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } },
      { jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id } },
      { jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id } },
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }], contextId },
        },
      },
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: 'm2', role: 'ROLE_USER', parts: [{ text: 'approve' }], taskId: id },
        },
      },
    ];
    const before = await turnCount();
    const foreign = probes(task.id, task.contextId);
    const missing = probes('a2a_missing', 'missing-context');
    for (const [index, body] of foreign.entries()) {
      const seen = await rpc('globex-key', 'default', body);
      const absent = await rpc('globex-key', 'default', missing[index]);
      expect(seen.status).toBe(absent.status);
      expect(
        JSON.stringify(seen.body).replaceAll(task.id, 'ID').replaceAll(task.contextId, 'CTX'),
      ).toBe(
        JSON.stringify(absent.body)
          .replaceAll('a2a_missing', 'ID')
          .replaceAll('missing-context', 'CTX'),
      );
      expect(seen.body.error.code).toBeLessThan(0);
    }
    expect(await turnCount()).toBe(before);
  });

  it("refuses bad input with A2A's JSON-RPC codes, writing nothing", async () => {
    const before = await turnCount();
    const send = (params: unknown) => ({ jsonrpc: '2.0', id: 3, method: 'SendMessage', params });
    const cases: [unknown, number, number][] = [
      ['{"jsonrpc": "2.0", ', 400, -32700],
      [{ jsonrpc: '1.0', id: 1, method: 'GetTask' }, 400, -32600],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/nothing', params: {} }, 400, -32601],
      [send({}), 400, -32602],
      [send({ message: { messageId: 'x', parts: [] } }), 400, -32602],
      [send({ message: { messageId: 'x', parts: [{ text: '   ' }] } }), 400, -32602],
      [
        send({ message: { messageId: 'x', parts: [{ url: 'https://example.com/a.png' }] } }),
        415,
        -32005,
      ],
      [
        send({
          message: { messageId: 'x', parts: [{ text: 'hi' }] },
          configuration: { taskPushNotificationConfig: { url: 'https://example.com/hook' } },
        }),
        400,
        -32602,
      ],
      [
        send({
          message: { messageId: 'x', parts: [{ text: 'hi' }] },
          configuration: { taskPushNotificationConfig: { url: 'http://127.0.0.1:1/hook' } },
        }),
        400,
        -32602,
      ],
      [
        { jsonrpc: '2.0', id: 1, method: 'CreateTaskPushNotificationConfig', params: {} },
        400,
        -32602,
      ],
      [{ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} }, 400, -32004],
      [{ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { pageSize: 101 } }, 400, -32602],
      [
        { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { pageToken: 'not-a-token' } },
        400,
        -32602,
      ],
      [
        { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { status: 'TASK_STATE_BORED' } },
        400,
        -32602,
      ],
      [{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'nope' } }, 404, -32001],
    ];
    for (const [body, status, code] of cases) {
      const answer = await rpc('alice-key', 'default', body);
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.body.jsonrpc).toBe('2.0');
      expect(answer.body.error.code, JSON.stringify(body)).toBe(code);
      expect(typeof answer.body.error.message).toBe('string');
    }
    // An unknown agent, no key: refused in the same shape.
    const unknown = await rpc(
      'alice-key',
      'nobody',
      send({ message: { messageId: 'x', parts: [{ text: 'hi' }] } }),
    );
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.data[0].reason).toBe('unknown_agent');
    const anonymous = await rpc(
      null,
      'default',
      send({ message: { messageId: 'x', parts: [{ text: 'hi' }] } }),
    );
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.data[0].reason).toBe('unauthorized');
    // A version this server does not speak.
    const old = await fetch(`${server.url}/a2a/default`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer alice-key',
        'a2a-version': '0.3',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
    });
    expect(((await old.json()) as { error: { code: number } }).error.code).toBe(-32009);
    expect(await turnCount()).toBe(before);
  });
});

describe('the a2a tool kind: a Parley agent calling a remote A2A agent', () => {
  let front: TestServer;
  let card: string;

  beforeAll(async () => {
    card = `${server.url}/a2a/default/.well-known/agent-card.json`;
    front = await startTestServer(
      {
        auth: { keys: [{ key_env: 'K_FRONT', tenant: 'acme', user: 'fran', roles: [] }] },
        agents: {
          front: {
            model: 'demo/echo',
            tools: { billing_agent: { a2a: card, api_key_env: 'REMOTE_KEY', policy: 'allow' } },
          },
        },
      },
      { K_FRONT: 'front-key', REMOTE_KEY: 'alice-key' },
    );
  });
  afterAll(async () => {
    if (front) {
      await checkJournalInvariants(front.db);
      await front.close();
    }
  });

  it('offers no push notifications where the operator allows no host for them', async () => {
    const client = await clientFor('front-key', 'front', front);
    expect((await client.getAgentCard()).capabilities?.pushNotifications).toBe(false);
    const call = (method: string, params: unknown) =>
      fetch(`${front.url}/a2a/front`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer front-key' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      }).then(async (response) => ({
        status: response.status,
        body: (await response.json()) as any,
      }));
    const send = await call('SendMessage', {
      message: { messageId: 'push-off', parts: [{ text: 'hi' }] },
      configuration: { taskPushNotificationConfig: { url: 'https://example.com/hook' } },
    });
    expect(send.body.error.code).toBe(-32003);
    for (const method of [
      'CreateTaskPushNotificationConfig',
      'GetTaskPushNotificationConfig',
      'ListTaskPushNotificationConfigs',
      'DeleteTaskPushNotificationConfig',
    ]) {
      const refused = await call(method, { taskId: 'x', url: 'https://example.com/hook' });
      expect(refused.status, method).toBe(400);
      expect(refused.body.error.code, method).toBe(-32003);
    }
    expect((await front.db.query('select 1 from turns')).rowCount).toBe(0);
  });

  it("runs the call with the SDK's client: the remote's reply is the tool's result", async () => {
    const client = await clientFor('front-key', 'front', front);
    const task = (await client.sendMessage(
      sendRequest(userMessage('/tool billing_agent {"message": "where is my invoice"}')),
    )) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(task)).toContain('You said: where is my invoice');
    const results = await front.db.query<{ payload: { result?: { state?: string } } }>(
      `select payload from events where type = 'tool_result' and session_id = $1`,
      [task.contextId],
    );
    expect(results.rows[0]?.payload.result).toMatchObject({ state: 'completed' });
  });

  it('sends the same messageId when the same call runs again: the remote sees one task', async () => {
    const kind = builtInTools({ env: { REMOTE_KEY: 'alice-key' } }).get('a2a');
    if (!kind?.compileOptions) throw new Error('no a2a kind');
    const options = kind.compileOptions({ a2a: card, api_key_env: 'REMOTE_KEY' });
    const scope: CallScope = {
      tenant: 'acme',
      agent: 'front',
      user: 'fran',
      sessionId: 'sess_replayed',
      callId: 'call_replayed',
      workspaceDir: '',
      memory: new MemoryEffects(),
    };
    const context = { signal: new AbortController().signal, timeoutMs: 30_000, scope, options };
    const before = await turnCount();
    const first = (await kind.execute({ message: 'charge it once' }, context)) as Record<
      string,
      unknown
    >;
    // A crash between the send and the result: the runtime asks the tool, which runs again.
    expect(await kind.reconcile?.({ message: 'charge it once' }, context)).toBe('not_done');
    const replayed = (await kind.execute({ message: 'charge it once' }, context)) as Record<
      string,
      unknown
    >;
    expect(first).toMatchObject({ state: 'completed', reply: 'You said: charge it once' });
    expect(replayed.task_id).toBe(first.task_id);
    expect(await turnCount()).toBe(before + 1);

    // Another call is another message: another task.
    const other = (await kind.execute(
      { message: 'charge it once' },
      { ...context, scope: { ...scope, callId: 'call_other' } },
    )) as Record<string, unknown>;
    expect(other.task_id).not.toBe(first.task_id);
  });

  it('returns a remote input-required as the result; calling again with task_id answers it', async () => {
    const kind = builtInTools({ env: { REMOTE_KEY: 'alice-key' } }).get('a2a');
    if (!kind?.compileOptions) throw new Error('no a2a kind');
    const options = kind.compileOptions({
      a2a: `${server.url}/a2a/careful/.well-known/agent-card.json`,
      api_key_env: 'REMOTE_KEY',
    });
    const scope: CallScope = {
      tenant: 'acme',
      agent: 'front',
      user: 'fran',
      sessionId: 'sess_asking',
      callId: 'call_asking',
      workspaceDir: '',
      memory: new MemoryEffects(),
    };
    const context = { signal: new AbortController().signal, timeoutMs: 30_000, scope, options };
    const asked = (await kind.execute(
      { message: '/tool calculator {"expression": "6*7"}' },
      context,
    )) as Record<string, unknown>;
    expect(asked).toMatchObject({ state: 'input-required', task_id: expect.any(String) });
    expect(String(asked.needs_input)).toContain('calculator');
    const answered = (await kind.execute(
      { message: 'approve', task_id: asked.task_id as string },
      { ...context, scope: { ...scope, callId: 'call_answering' } },
    )) as Record<string, unknown>;
    expect(answered).toMatchObject({ state: 'completed', task_id: asked.task_id });
    expect(String(answered.reply)).toContain('42');
  });

  it('refuses an a2a entry without a card URL, naming the key', async () => {
    const kind = builtInTools().get('a2a');
    expect(() => kind?.compileOptions?.({ a2a: 'not a url' })).toThrow(/^a2a:/);
    expect(() => kind?.compileOptions?.({ a2a: card, header: {} })).toThrow(/^header:/);
  });
});
