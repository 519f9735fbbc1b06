import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskResultSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Parley as an MCP server (docs/protocols.md, "MCP server"), driven by the official MCP
// SDK's Client over Streamable HTTP, on the engine the suite runs on.

let server: TestServer;
const keys = {
  alice: 'alice-key',
  bob: 'bob-key',
  globex: 'globex-key',
  admin: 'acme-admin-key',
};
const clients: Client[] = [];

beforeAll(async () => {
  server = await startTestServer(
    {
      // A call follows its turn at most this long, then answers it as it stands.
      server: { blocking_wait_ms: 6000 },
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'gus', roles: [] },
          { key_env: 'K_ADMIN', tenant: 'acme', user: 'ada', roles: ['admin'] },
        ],
      },
      agents: {
        default: { model: 'demo/echo', visibility: 'private' },
        helper: { model: 'demo/echo' },
        gated: { model: 'demo/echo', tools: { calculator: 'approve' } },
        curious: { model: 'demo/echo', tools: { ask_user: 'allow' } },
      },
    },
    {
      K_ALICE: keys.alice,
      K_BOB: keys.bob,
      K_GLOBEX: keys.globex,
      K_ADMIN: keys.admin,
      // A word every 15 ms: a reply of 40 words is still streaming when a stream is cut.
      PARLEY_DEMO_DELAY_MS: '15',
    },
  );
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** An MCP client of `key`'s principal; with `elicit`, it declares elicitation and answers so. */
async function connect(
  key: string,
  elicit?: (request: ElicitRequest) => ElicitResult | Promise<ElicitResult>,
): Promise<Client> {
  const client = new Client(
    { name: 'parley-test', version: '1' },
    { capabilities: elicit ? { elicitation: { form: {} } } : {} },
  );
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: auth(key) },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

interface Outcome {
  session_id: string;
  turn_id: string;
  status: string;
  reply: string;
  request_id?: string;
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  meta?: Record<string, unknown>,
): Promise<CallToolResult & { structuredContent?: Outcome }> {
  return (await client.callTool({
    name,
    arguments: args,
    ...(meta ? { _meta: meta } : {}),
  })) as CallToolResult & { structuredContent?: Outcome };
}

const textOf = (result: CallToolResult) =>
  result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');

describe('Parley as an MCP server, with the official MCP client', () => {
  it("lists the principal's agents as tools, with their input and output schemas", async () => {
    // An agent of acme's own: acme's principals see it, globex's do not.
    const defined = await request(
      server.url,
      'PUT',
      '/api/v1/agents/acme_only',
      { instructions: 'Only for acme.' },
      auth(keys.admin),
    );
    expect(defined.status).toBeLessThan(300);
    const alice = await connect(keys.alice);
    const mine = (await alice.listTools()).tools;
    expect(mine.map((tool) => tool.name).sort()).toEqual(
      ['acme_only', 'curious', 'default', 'gated', 'helper'].sort(),
    );
    const helper = mine.find((tool) => tool.name === 'helper');
    expect(helper?.inputSchema.required).toEqual(['message']);
    expect(helper?.outputSchema?.required).toEqual(['session_id', 'turn_id', 'status', 'reply']);
    expect(helper?.execution?.taskSupport).toBe('optional');
    const globex = await connect(keys.globex);
    const theirs = (await globex.listTools()).tools.map((tool) => tool.name);
    expect(theirs).not.toContain('acme_only');
    expect(theirs).toContain('helper');
  });

  it('answers a call with the reply and the structured outcome; session_id continues it', async () => {
    const alice = await connect(keys.alice);
    const first = await call(alice, 'helper', { message: 'hello there' });
    expect(first.isError).toBeFalsy();
    expect(textOf(first)).toBe('You said: hello there');
    expect(first.structuredContent).toMatchObject({
      status: 'completed',
      reply: 'You said: hello there',
    });
    const sessionId = first.structuredContent?.session_id ?? '';
    const next = await call(alice, 'helper', { message: 'and again', session_id: sessionId });
    expect(next.structuredContent).toMatchObject({
      session_id: sessionId,
      status: 'completed',
      reply: 'You said: and again',
    });
    expect(next.structuredContent?.turn_id).not.toBe(first.structuredContent?.turn_id);
    const messages = await server.db.query<{ content: string }>(
      `select content from messages where session_id = $1 and role = 'user' order by sequence`,
      [sessionId],
    );
    expect(messages.rows.map((row) => row.content)).toEqual(['hello there', 'and again']);
  });

  it("answers another tenant's or owner's session exactly like a missing one, writing nothing", async () => {
    const alice = await connect(keys.alice);
    const mine = await call(alice, 'default', { message: 'private' });
    const sessionId = mine.structuredContent?.session_id ?? '';
    const before = await server.db.query('select count(*)::int as n from turns');
    for (const key of [keys.globex, keys.bob]) {
      const other = await connect(key);
      const foreign = await call(other, 'default', { message: 'let me in', session_id: sessionId });
      const missing = await call(other, 'default', {
        message: 'let me in',
        session_id: 'no_such_session',
      });
      expect(foreign.isError).toBe(true);
      expect(textOf(foreign)).toBe('session_not_found: no such session');
      expect(foreign).toEqual(missing);
    }
    const after = await server.db.query('select count(*)::int as n from turns');
    expect(after.rows[0]).toEqual(before.rows[0]);
  });

  it('sends progress notifications: the steps of the turn and its text as it streams', async () => {
    const alice = await connect(keys.alice);
    const steps: { progress: number; message?: string }[] = [];
    const result = (await alice.callTool(
      { name: 'helper', arguments: { message: 'progress please' } },
      undefined,
      { onprogress: (progress) => steps.push(progress) },
    )) as CallToolResult & { structuredContent: Outcome };
    expect(result.structuredContent.reply).toBe('You said: progress please');
    const numbers = steps.map((step) => step.progress);
    expect(numbers).toEqual(numbers.map((_, index) => index + 1));
    const messages = steps.map((step) => step.message);
    expect(messages[0]).toBe('started');
    expect(messages.at(-1)).toBe('completed');
    expect(messages.slice(1, -1).join('')).toBe('You said: progress please');
  });

  it('a broken stream resumes with Last-Event-ID: the rest once, the call answered, one turn', async () => {
    const requests: string[] = [];
    let broken = false;
    // The client's fetch, except that the call's own stream breaks after its second
    // progress event, as a dropped connection would.
    const breakingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const headers = new Headers(init?.headers);
      const method = init?.method ?? 'GET';
      requests.push(`${method} ${headers.get('last-event-id') ?? '-'}`);
      const isCall = typeof init?.body === 'string' && init.body.includes('"tools/call"');
      if (broken || !isCall || !response.body) return response;
      broken = true;
      const reader = response.body.getReader();
      let text = '';
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) return controller.close();
          controller.enqueue(value);
          text += new TextDecoder().decode(value);
          if ((text.match(/notifications\/progress/g) ?? []).length >= 2) {
            await reader.cancel();
            controller.error(new Error('the connection dropped'));
          }
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const client = new Client({ name: 'parley-test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: auth(keys.alice) },
        fetch: breakingFetch,
        reconnectionOptions: {
          initialReconnectionDelay: 100,
          maxReconnectionDelay: 1000,
          reconnectionDelayGrowFactor: 2,
          maxRetries: 5,
        },
      }),
    );
    clients.push(client);
    const key = `mcp_resume_${Date.now()}`;
    const message = Array.from({ length: 40 }, (_, index) => `word${index}`).join(' ');
    const steps: { progress: number; message?: string }[] = [];
    const result = (await client.callTool(
      { name: 'helper', arguments: { message }, _meta: { 'parley/idempotency_key': key } },
      undefined,
      { onprogress: (progress) => steps.push(progress) },
    )) as CallToolResult & { structuredContent: Outcome };
    expect(broken).toBe(true);
    expect(requests.filter((line) => line.startsWith('GET ') && line !== 'GET -')).toHaveLength(1);
    expect(result.structuredContent).toMatchObject({ status: 'completed', turn_id: key });
    expect(result.structuredContent.reply).toBe(`You said: ${message}`);
    // Every progress notification once, in order, across both connections.
    expect(steps.map((step) => step.progress)).toEqual(steps.map((_, index) => index + 1));
    expect(
      steps
        .map((step) => step.message)
        .slice(1, -1)
        .join(''),
    ).toBe(`You said: ${message}`);
    expect(await server.db.query('select 1 from turns where turn_id = $1', [key])).toMatchObject({
      rowCount: 1,
    });
  });

  it("cancelling the request is Parley's durable cancel: the turn ends cancelled", async () => {
    const alice = await connect(keys.alice);
    const key = `mcp_cancel_${Date.now()}`;
    const controller = new AbortController();
    const outcome = alice
      .callTool(
        {
          name: 'default',
          arguments: { message: '/stall a long wait' },
          _meta: { 'parley/idempotency_key': key },
        },
        undefined,
        {
          signal: controller.signal,
          // Once the turn runs, the client gives up on it.
          onprogress: (progress) => {
            if (progress.message === 'started') controller.abort('enough');
          },
        },
      )
      .then(
        () => 'answered',
        () => 'rejected',
      );
    expect(await outcome).toBe('rejected');
    const cancelled = await until(
      () =>
        server.db.query(
          `select 1 from events where type = 'cancelled' and coalesce(payload -> 'turn_ids', jsonb_build_array(turn_id)) ? $1`,
          [key],
        ),
      (found) => found.rowCount === 1,
      'the cancelled event',
    );
    expect(cancelled.rowCount).toBe(1);
    const turn = await server.db.query<{ state: string }>(
      'select state from turns where turn_id = $1',
      [key],
    );
    expect(turn.rows[0]?.state).toBe('cancelled');
  });

  it('asks an approval through elicitation and runs the call once approved', async () => {
    const asked: ElicitRequest[] = [];
    const alice = await connect(keys.alice, (elicitation) => {
      asked.push(elicitation);
      return { action: 'accept', content: { approve: true, reason: 'fine by me' } };
    });
    const result = await call(alice, 'gated', {
      message: '/tool calculator {"expression": "2+3"}',
    });
    expect(result.structuredContent?.status).toBe('completed');
    expect(result.structuredContent?.reply).toContain('5');
    expect(asked).toHaveLength(1);
    expect(asked[0]?.params.message).toContain('calculator');
    const resolved = await server.db.query<{ payload: { actor: { user: string } } }>(
      `select payload from events where type = 'input_resolved' and session_id = $1`,
      [result.structuredContent?.session_id],
    );
    expect(resolved.rows.map((row) => row.payload.actor.user)).toEqual(['alice']);
  });

  it('a declined approval runs nothing; a question is answered through a form too', async () => {
    const declining = await connect(keys.alice, () => ({ action: 'decline' }));
    const refused = await call(declining, 'gated', {
      message: '/tool calculator {"expression": "7*6"}',
    });
    expect(refused.structuredContent?.status).toBe('completed');
    expect(refused.structuredContent?.reply).not.toContain('42');
    expect(refused.structuredContent?.reply).toContain('rejected');

    const answering = await connect(keys.alice, (elicitation) => {
      expect(elicitation.params.message).toBe('Which colour?');
      return { action: 'accept', content: { answer: 'teal' } };
    });
    const answered = await call(answering, 'curious', {
      message: '/tool ask_user {"question": "Which colour?"}',
    });
    expect(answered.structuredContent?.status).toBe('completed');
    expect(answered.structuredContent?.reply).toContain('teal');
  });

  it("without elicitation, answers input_required at once; the turn is answered in Parley's API", async () => {
    const alice = await connect(keys.alice);
    const key = `mcp_inbox_${Date.now()}`;
    const args = { message: '/tool calculator {"expression": "4*5"}' };
    const meta = { 'parley/idempotency_key': key };
    const waiting = await call(alice, 'gated', args, meta);
    expect(waiting.isError).toBeFalsy();
    expect(waiting.structuredContent).toMatchObject({ status: 'input_required', turn_id: key });
    const requestId = waiting.structuredContent?.request_id ?? '';
    expect(textOf(waiting)).toContain(requestId);
    const sessionId = waiting.structuredContent?.session_id ?? '';
    const inbox = await request(
      server.url,
      'GET',
      '/api/v1/inputs?state=pending',
      undefined,
      auth(keys.alice),
    );
    const item = inbox.body.items.find(
      (each: { request_id: string }) => each.request_id === requestId,
    );
    const answer = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${requestId}`,
      { expected_sequence: item.expected_sequence, approved: true },
      auth(keys.alice),
    );
    expect(answer.status).toBe(200);
    // The same call again (the same key) follows the same turn to its end.
    const ended = await call(alice, 'gated', args, meta);
    expect(ended.structuredContent).toMatchObject({
      status: 'completed',
      turn_id: key,
      session_id: sessionId,
    });
    expect(ended.structuredContent?.reply).toContain('20');
  });

  it('an idempotency key in _meta is the turn id: a retry is the same turn, admitted once', async () => {
    const alice = await connect(keys.alice);
    const key = `mcp_once_${Date.now()}`;
    const meta = { 'parley/idempotency_key': key };
    const first = await call(alice, 'helper', { message: 'only once' }, meta);
    const again = await call(alice, 'helper', { message: 'only once' }, meta);
    expect(first.structuredContent?.turn_id).toBe(key);
    expect(again.structuredContent).toEqual(first.structuredContent);
    const turns = await server.db.query('select 1 from turns where turn_id = $1', [key]);
    expect(turns.rowCount).toBe(1);
    // Another message under the same key is a conflict, not a second turn.
    const conflict = await call(alice, 'helper', { message: 'something else' }, meta);
    expect(conflict.isError).toBe(true);
    expect(textOf(conflict)).toMatch(/^turn_conflict: /);
  });

  it('answers a turn still running after server.blocking_wait_ms as it stands', async () => {
    const alice = await connect(keys.alice);
    const running = await call(alice, 'default', { message: '/stall forever' });
    expect(running.structuredContent?.status).toBe('in_progress');
    expect(textOf(running)).toContain(running.structuredContent?.turn_id ?? 'none');
    const turnId = running.structuredContent?.turn_id ?? '';
    const cancelled = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${running.structuredContent?.session_id}/turns/${turnId}/cancel`,
      { command_id: `c_${turnId}` },
      auth(keys.alice),
    );
    expect(cancelled.status).toBe(200);
  });

  it('refuses bad input with coded errors and without a key answers 401, writing nothing', async () => {
    const before = await server.db.query('select count(*)::int as n from turns');
    const alice = await connect(keys.alice);
    const unknown = await alice.callTool({ name: 'nobody', arguments: { message: 'hi' } }).then(
      () => null,
      (caught: unknown) => caught as { code?: number; message?: string },
    );
    expect(unknown?.code).toBe(-32602);
    const invalid = await call(alice, 'helper', { message: 42 });
    expect(invalid.isError).toBe(true);
    expect(textOf(invalid)).toMatch(/^invalid_request: message/);
    const empty = await call(alice, 'helper', { message: '   ' });
    expect(textOf(empty)).toMatch(/^empty_message: /);
    const badKey = await call(
      alice,
      'helper',
      { message: 'hi' },
      {
        'parley/idempotency_key': 'not a key!',
      },
    );
    expect(textOf(badKey)).toMatch(/^invalid_request: _meta/);

    const raw = (body: string, headers: Record<string, string> = auth(keys.alice)) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
        body,
      });
    const unauthorized = await raw('{}', {});
    expect(unauthorized.status).toBe(401);
    expect(((await unauthorized.json()) as { error: string }).error).toBe('unauthorized');
    const malformed = await raw('{"jsonrpc":');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { code: -32700 } });
    const uninitialized = await raw(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    );
    expect(uninitialized.status).toBe(400);
    expect(await uninitialized.json()).toMatchObject({ error: { code: -32000 } });
    const foreignSession = await raw(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      { ...auth(keys.globex), 'mcp-session-id': String(clients[0]?.transport?.sessionId) },
    );
    expect(foreignSession.status).toBe(404);
    expect(await foreignSession.json()).toMatchObject({ error: { code: -32001 } });
    // A resume: without a session, of another principal's session, or at an unknown cursor.
    const resume = (headers: Record<string, string>) =>
      fetch(`${server.url}/mcp`, {
        headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', ...headers },
      });
    const sessionId = String(alice.transport?.sessionId);
    expect((await resume({ ...auth(keys.alice), 'last-event-id': 'x.1' })).status).toBe(400);
    const foreignResume = await resume({
      ...auth(keys.globex),
      'mcp-session-id': sessionId,
      'last-event-id': 'x.1',
    });
    expect(foreignResume.status).toBe(404);
    const unknownCursor = await resume({
      ...auth(keys.alice),
      'mcp-session-id': sessionId,
      'last-event-id': 'nothing.1',
    });
    expect(unknownCursor.status).toBe(400);
    expect((await resume({ ...auth(keys.alice), 'mcp-session-id': sessionId })).status).toBe(405);
    const after = await server.db.query('select count(*)::int as n from turns');
    expect(after.rows[0]).toEqual(before.rows[0]);
  });
});

describe('MCP tasks: a tools/call with a task param is a turn, followed by its task id', () => {
  /** A task-augmented call, answered at once with the created task. */
  const createTask = (client: Client, name: string, args: Record<string, unknown>, meta = {}) =>
    client.request(
      { method: 'tools/call', params: { name, arguments: args, task: {}, _meta: meta } },
      CreateTaskResultSchema,
    );
  /** The JSON-RPC error a request answers (null: it succeeded). */
  const errorOf = (pending: Promise<unknown>) =>
    pending.then(
      () => null,
      (caught: unknown) => {
        expect(caught).toBeInstanceOf(McpError);
        const { code, message } = caught as McpError;
        return { code, message };
      },
    );

  it('runs a call as a task: polled to completion, its result as the call answers it, listed', async () => {
    const alice = await connect(keys.alice);
    const seen: string[] = [];
    let taskId = '';
    let result: CallToolResult | undefined;
    const stream = alice.experimental.tasks.callToolStream(
      { name: 'helper', arguments: { message: 'hello task' } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    );
    for await (const message of stream) {
      seen.push(message.type);
      if (message.type === 'taskCreated') taskId = message.task.taskId;
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') throw message.error;
    }
    expect(seen[0]).toBe('taskCreated');
    expect(seen.at(-1)).toBe('result');
    expect(taskId).toMatch(/^mcpt_[A-Za-z0-9_-]{32}$/);
    const outcome = result?.structuredContent as unknown as Outcome;
    expect(outcome).toMatchObject({ status: 'completed', turn_id: taskId });
    expect(outcome.reply).toContain('hello task');
    expect(textOf(result as CallToolResult)).toBe(outcome.reply);
    const turn = await server.db.query<{ state: string }>(
      'select state from turns where turn_id = $1',
      [taskId],
    );
    expect(turn.rows[0]?.state).toBe('done');

    // Another MCP session of the principal (another process, say) answers it from the journal.
    const again = await connect(keys.alice);
    const task = await again.experimental.tasks.getTask(taskId);
    expect(task).toMatchObject({ taskId, status: 'completed', ttl: null, pollInterval: 1000 });
    const stored = await again.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(stored.structuredContent).toEqual(outcome);
    const listed = await again.experimental.tasks.listTasks();
    expect(listed.tasks.map((each) => each.taskId)).toContain(taskId);

    // An idempotency key: a retry of the task is the same task, one turn.
    const meta = { 'parley/idempotency_key': `task_once_${Date.now()}` };
    const first = await createTask(alice, 'helper', { message: 'only once' }, meta);
    const retry = await createTask(again, 'helper', { message: 'only once' }, meta);
    expect(retry.task.taskId).toBe(first.task.taskId);
    const turns = await server.db.query('select 1 from turns where turn_id = $1', [
      first.task.taskId,
    ]);
    expect(turns.rowCount).toBe(1);
  });

  it("tasks/cancel is Parley's durable cancel of the running turn", async () => {
    const alice = await connect(keys.alice);
    const { task } = await createTask(alice, 'default', { message: '/stall a long wait' });
    expect(task.status).toBe('working');
    await until(
      () => server.db.query('select state from turns where turn_id = $1', [task.taskId]),
      (found) => found.rows[0]?.state === 'running',
      'the turn running',
    );
    const cancelled = await alice.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled).toMatchObject({ taskId: task.taskId, status: 'cancelled' });
    expect((await alice.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
    const result = await alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ status: 'cancelled' });
    const twice = await errorOf(alice.experimental.tasks.cancelTask(task.taskId));
    expect(twice?.code).toBe(-32602);
    expect(twice?.message).toContain('terminal status: cancelled');
  });

  it("is input_required while the turn waits in Parley's inbox, and completes once answered", async () => {
    const alice = await connect(keys.alice);
    const { task } = await createTask(alice, 'gated', {
      message: '/tool calculator {"expression": "4*5"}',
    });
    const waiting = await until(
      () => alice.experimental.tasks.getTask(task.taskId),
      (found) => found.status === 'input_required',
      'the task waiting for input',
    );
    expect(waiting.statusMessage).toContain("Parley's inbox");
    const inbox = await request(
      server.url,
      'GET',
      '/api/v1/inputs?state=pending',
      undefined,
      auth(keys.alice),
    );
    const item = inbox.body.items.find((each: { request_id: string }) =>
      waiting.statusMessage?.includes(each.request_id),
    );
    // tasks/result waits for the end, while the person answers in the inbox.
    const ended = alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    const answer = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${item.session_id}/inputs/${item.request_id}`,
      { expected_sequence: item.expected_sequence, approved: true },
      auth(keys.alice),
    );
    expect(answer.status).toBe(200);
    const result = await ended;
    expect(result.structuredContent).toMatchObject({ status: 'completed', turn_id: task.taskId });
    expect((result.structuredContent as unknown as Outcome).reply).toContain('20');
  });

  it('asks the approval a task waits on through elicitation on tasks/result, and completes', async () => {
    const asked: ElicitRequest[] = [];
    const alice = await connect(keys.alice, (elicitation) => {
      asked.push(elicitation);
      return { action: 'accept', content: { approve: true } };
    });
    let taskId = '';
    let result: CallToolResult | undefined;
    const statuses: string[] = [];
    // The SDK's task stream polls the task, and on input_required waits on tasks/result.
    for await (const message of alice.experimental.tasks.callToolStream(
      { name: 'gated', arguments: { message: '/tool calculator {"expression": "2+3"}' } },
      CallToolResultSchema,
      { task: {} },
    )) {
      if (message.type === 'taskCreated') taskId = message.task.taskId;
      if (message.type === 'taskStatus') statuses.push(message.task.status);
      if (message.type === 'result') result = message.result;
      if (message.type === 'error') throw message.error;
    }
    expect(statuses).toContain('input_required');
    expect(asked).toHaveLength(1);
    expect(asked[0]?.params.message).toContain('calculator');
    expect(asked[0]?.params._meta?.[RELATED_TASK_META_KEY]).toEqual({ taskId });
    const outcome = result?.structuredContent as unknown as Outcome;
    expect(outcome).toMatchObject({ status: 'completed', turn_id: taskId });
    expect(outcome.reply).toContain('5');
    const resolved = await server.db.query<{ payload: { actor: { user: string } } }>(
      `select payload from events where type = 'input_resolved' and session_id = $1`,
      [outcome.session_id],
    );
    expect(resolved.rows.map((row) => row.payload.actor.user)).toEqual(['alice']);
  });

  it("a dismissed form leaves the task input_required and the request in Parley's inbox", async () => {
    let asked = 0;
    let dismissed: () => void = () => undefined;
    const shown = new Promise<void>((resolve) => (dismissed = resolve));
    const alice = await connect(keys.alice, () => {
      asked += 1;
      dismissed();
      return { action: 'cancel' };
    });
    const { task } = await createTask(alice, 'gated', {
      message: '/tool calculator {"expression": "6*7"}',
    });
    // tasks/result waits from the start; the form comes once the turn waits for a person.
    const ended = alice.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await shown;
    const waiting = await alice.experimental.tasks.getTask(task.taskId);
    expect(waiting.status).toBe('input_required');
    const inbox = await request(
      server.url,
      'GET',
      '/api/v1/inputs?state=pending',
      undefined,
      auth(keys.alice),
    );
    const item = inbox.body.items.find((each: { request_id: string }) =>
      waiting.statusMessage?.includes(each.request_id),
    );
    expect(item).toBeDefined();
    // Another principal's elicitation client finds no such task, and is asked nothing.
    let bobAsked = 0;
    const bob = await connect(keys.bob, () => {
      bobAsked += 1;
      return { action: 'cancel' };
    });
    const foreign = await errorOf(
      bob.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema),
    );
    expect(foreign?.code).toBe(-32602);
    expect(foreign?.message).toContain(`Task not found: ${task.taskId}`);
    expect(bobAsked).toBe(0);
    // Answered in the inbox, the task goes on: the same tasks/result answers its end.
    const answer = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${item.session_id}/inputs/${item.request_id}`,
      { expected_sequence: item.expected_sequence, approved: true },
      auth(keys.alice),
    );
    expect(answer.status).toBe(200);
    const result = await ended;
    expect(result.structuredContent).toMatchObject({ status: 'completed', turn_id: task.taskId });
    expect((result.structuredContent as unknown as Outcome).reply).toContain('42');
    expect(asked).toBe(1);
  });

  it("answers another principal's or tenant's task exactly like a missing one", async () => {
    const alice = await connect(keys.alice);
    const { task } = await createTask(alice, 'helper', { message: 'mine alone' });
    const missing = `mcpt_${'x'.repeat(32)}`;
    const answers = async (client: Client, taskId: string) => ({
      get: await errorOf(client.experimental.tasks.getTask(taskId)),
      result: await errorOf(client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)),
      cancel: await errorOf(client.experimental.tasks.cancelTask(taskId)),
    });
    const none = await answers(alice, missing);
    expect(none.get?.code).toBe(-32602);
    for (const key of [keys.bob, keys.globex]) {
      const other = await connect(key);
      const theirs = await answers(other, task.taskId);
      expect(JSON.stringify(theirs).replaceAll(task.taskId, missing)).toBe(JSON.stringify(none));
      const listed = await other.experimental.tasks.listTasks();
      expect(listed.tasks.map((each) => each.taskId)).not.toContain(task.taskId);
    }
    expect((await alice.experimental.tasks.getTask(task.taskId)).taskId).toBe(task.taskId);
  });

  it('refuses malformed task params with JSON-RPC errors, writing nothing', async () => {
    const before = await server.db.query('select count(*)::int as n from turns');
    const alice = await connect(keys.alice);
    const refusals = await Promise.all([
      errorOf(createTask(alice, 'helper', {})),
      errorOf(createTask(alice, 'helper', { message: 'hi', extra: true })),
      errorOf(createTask(alice, 'helper', { message: '   ' })),
      errorOf(createTask(alice, 'nobody', { message: 'hi' })),
      errorOf(createTask(alice, 'helper', { message: 'hi' }, { 'parley/idempotency_key': '!' })),
      errorOf(
        alice.request(
          {
            method: 'tools/call',
            params: { name: 'helper', arguments: { message: 'hi' }, task: { ttl: 'soon' } },
          },
          CreateTaskResultSchema,
        ),
      ),
      errorOf(alice.request({ method: 'tasks/get', params: {} }, GetTaskResultSchema)),
      errorOf(alice.experimental.tasks.listTasks('not a cursor')),
    ]);
    for (const refusal of refusals) expect(refusal?.code).toBe(-32602);
    expect(refusals[2]?.message).toContain(': empty_message: ');
    const after = await server.db.query('select count(*)::int as n from turns');
    expect(after.rows[0]).toEqual(before.rows[0]);
  });
});
