import {
  AbstractChat,
  lastAssistantMessageIsCompleteWithToolCalls,
  type ChatInit,
  type ChatState,
  type ChatStatus,
  type UIMessage,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ParleyChatTransport,
  isAbandonedPart,
  replyMessageId,
  toUIMessages,
} from '../src/ai-sdk/index.js';
import { ParleyClient } from '../src/client/index.js';
import { until } from './support/poll.js';
import { startTestServer, type TestServer } from './support/server.js';
import { journalOf } from './support/journal.js';

// ParleyChatTransport under the `ai` package's own AbstractChat (what useChat runs), against
// a real in-process Parley: stop() at every stage of a request, a message folded into a
// streaming reply, regenerate(), and the SSE reconnection hint.
let server: TestServer;
let client: ParleyClient;
let counter = 0;

beforeAll(async () => {
  server = await startTestServer(
    { agents: { default: { model: 'demo/echo', tools: { calculator: 'allow' } } } },
    { PARLEY_DEMO_DELAY_MS: '25' },
  );
  client = new ParleyClient({ baseUrl: server.url });
});
afterAll(async () => {
  await server.close();
});

/** A ChatState over plain arrays, as the framework packages keep theirs. */
class ArrayChatState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  constructor(public messages: UIMessage[]) {}
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.messages.map((entry, at) => (at === index ? message : entry));
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

class TestChat extends AbstractChat<UIMessage> {
  constructor(init: ChatInit<UIMessage>) {
    super({ ...init, state: new ArrayChatState(init.messages ?? []) });
  }
}

/** A fetch that holds the requests `held` picks until `release()`, before or after sending. */
function holdingFetch(held: (method: string, url: string) => 'request' | 'response' | null) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let reached!: () => void;
  const heldOne = new Promise<void>((resolve) => (reached = resolve));
  const wrapped: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const hold = held(init?.method ?? 'GET', url);
    if (hold === 'request') {
      reached();
      await released;
      return fetch(input, init);
    }
    const response = await fetch(input, init);
    if (hold === 'response') {
      // The server has answered (the admission landed): the client has not heard yet.
      reached();
      await released;
    }
    return response;
  };
  return { fetch: wrapped, heldOne, release };
}

function userMessage(text: string): UIMessage {
  return { id: `ui_${Date.now()}_${counter++}`, role: 'user', parts: [{ type: 'text', text }] };
}

const textOf = (message: UIMessage) =>
  message.parts
    .filter((part) => part.type === 'text' && !isAbandonedPart(part))
    .map((part) => (part as { text: string }).text)
    .join('');

async function journal(sessionId: string): Promise<any[]> {
  return (await journalOf(server.db, sessionId)).map((row) => row.payload);
}

async function ended(sessionId: string): Promise<any[]> {
  return until(
    () => journal(sessionId),
    (events) => events.some((event) => ['done', 'cancelled', 'error'].includes(event.type)),
    'the turn to end',
  );
}

// A reply that waits for its call to be aborted before it proposes a tool call: a tool
// call in the journal would mean the turn went on after the stop.
const stalledToolCall = '/stall\n/tool calculator {"expression":"1+1"}';

function expectCancelledWithoutTools(events: any[], turnId: string): void {
  const cancelled = events.filter((event) => event.type === 'cancelled');
  expect(cancelled).toHaveLength(1);
  expect(cancelled[0].turn_ids).toContain(turnId);
  expect(events.some((event) => event.type === 'done')).toBe(false);
  expect(events.some((event) => event.type === 'tool_call')).toBe(false);
  expect(events.some((event) => event.type === 'tool_result')).toBe(false);
}

describe('stop() before the stream exists', () => {
  it('cancels when stop() comes while the admission is in flight', async () => {
    const chatId = (await client.createSession({})).session_id;
    const transport = new ParleyChatTransport({ client });
    const chat = new TestChat({ id: chatId, transport });
    const message = userMessage(stalledToolCall);
    const sending = chat.sendMessage(message);
    await chat.stop();
    await sending;
    expect(chat.status).toBe('ready');
    expectCancelledWithoutTools(await ended(chatId), message.id);
  });

  it('cancels also when a new message follows the stop() at once', async () => {
    const chatId = (await client.createSession({})).session_id;
    const chat = new TestChat({ id: chatId, transport: new ParleyChatTransport({ client }) });
    const message = userMessage(stalledToolCall);
    const sending = chat.sendMessage(message);
    await chat.stop();
    const next = chat.sendMessage(userMessage('and now this'));
    await sending;
    const events = await until(
      () => journal(chatId),
      (list) => list.some((event) => event.type === 'cancelled'),
      'the stopped turn to end',
    );
    const cancelled = events.find((event) => event.type === 'cancelled');
    expect(cancelled.turn_ids).toContain(message.id);
    expect(events.some((event) => event.type === 'tool_call')).toBe(false);
    await next;
  });

  it('cancels when the admission landed but its answer comes after stop()', async () => {
    const chatId = (await client.createSession({})).session_id;
    const slow = holdingFetch((method, url) =>
      method === 'POST' && url.endsWith('/chat/turns') ? 'response' : null,
    );
    const transport = new ParleyChatTransport({
      client: new ParleyClient({ baseUrl: server.url, fetch: slow.fetch }),
    });
    const chat = new TestChat({ id: chatId, transport });
    const message = userMessage(stalledToolCall);
    const sending = chat.sendMessage(message);
    await slow.heldOne;
    await chat.stop();
    slow.release();
    await sending;
    expectCancelledWithoutTools(await ended(chatId), message.id);
  });

  it('cancels once the admission lands when stop() came before it reached the server', async () => {
    const chatId = (await client.createSession({})).session_id;
    const late = holdingFetch((method, url) =>
      method === 'POST' && url.endsWith('/chat/turns') ? 'request' : null,
    );
    const transport = new ParleyChatTransport({
      client: new ParleyClient({ baseUrl: server.url, fetch: late.fetch }),
    });
    const chat = new TestChat({ id: chatId, transport });
    const message = userMessage(stalledToolCall);
    const sending = chat.sendMessage(message);
    await late.heldOne;
    await chat.stop();
    // The first cancel found no such turn (404): the admission has not been sent yet.
    expect(await journal(chatId)).toEqual([]);
    late.release();
    await sending;
    expectCancelledWithoutTools(await ended(chatId), message.id);
  });

  it('cancels the running turn when stop() comes while resumeStream() looks it up', async () => {
    const chatId = (await client.createSession({})).session_id;
    const turnId = `stalled_${counter++}`;
    await client.admitTurn({ sessionId: chatId, turnId, message: stalledToolCall });
    await until(
      () => journal(chatId),
      (events) => events.some((event) => event.type === 'turn_started'),
      'the turn to start',
    );
    const slow = holdingFetch((method, url) =>
      method === 'GET' && url.endsWith(`/chat/sessions/${chatId}`) ? 'response' : null,
    );
    const transport = new ParleyChatTransport({
      client: new ParleyClient({ baseUrl: server.url, fetch: slow.fetch }),
    });
    const chat = new TestChat({ id: chatId, transport });
    const resuming = chat.resumeStream();
    await slow.heldOne;
    await chat.stop();
    slow.release();
    await resuming;
    expectCancelledWithoutTools(await ended(chatId), turnId);
  });
});

describe('a message sent while a reply streams', () => {
  it('shows the folded reply once, with the id and text a reload shows', async () => {
    const chatId = (await client.createSession({})).session_id;
    const chat = new TestChat({ id: chatId, transport: new ParleyChatTransport({ client }) });
    const first = userMessage(Array.from({ length: 150 }, (_, index) => `a${index}`).join(' '));
    const second = userMessage('beta gamma');
    const answering = chat.sendMessage(first);
    await until(
      () => journal(chatId),
      (events) => events.some((event) => event.type === 'text_delta'),
      'the first reply to stream',
    );
    const folding = chat.sendMessage(second);
    await Promise.all([answering, folding]);

    const events = await journal(chatId);
    const dones = events.filter((event) => event.type === 'done');
    expect(dones).toHaveLength(1);
    expect(dones[0].turn_ids).toEqual([first.id, second.id]);
    const replies = chat.messages.filter((message) => message.role === 'assistant');
    expect(replies.map((reply) => reply.id)).toEqual([replyMessageId(first.id)]);

    const reloaded = toUIMessages((await client.listMessages(chatId, { limit: 50 })).items);
    const reloadedReplies = reloaded.filter((message) => message.role === 'assistant');
    expect(reloadedReplies.map((reply) => reply.id)).toEqual([replyMessageId(first.id)]);
    expect(textOf(replies[0] as UIMessage)).toBe(textOf(reloadedReplies[0] as UIMessage));
    expect(textOf(replies[0] as UIMessage)).toContain('[2] You said: beta gamma');
    expect(new Set(chat.messages.map((message) => message.id))).toEqual(
      new Set(reloaded.map((message) => message.id)),
    );
  });
});

describe("the app's own tools", () => {
  it('runs them in the app: onToolCall sees the call, addToolOutput sends the output, the turn goes on', async () => {
    const chatId = (await client.createSession({})).session_id;
    const seen: { toolName: string; input: unknown }[] = [];
    const chat: TestChat = new TestChat({
      id: chatId,
      transport: new ParleyChatTransport({
        client,
        clientTools: [{ name: 'get_weather', parameters: { type: 'object' } }],
      }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) => {
        if (toolCall.toolName !== 'get_weather') return;
        seen.push({ toolName: toolCall.toolName, input: toolCall.input });
        void chat.addToolOutput({
          tool: 'get_weather',
          toolCallId: toolCall.toolCallId,
          output: 'sunny, 21 C',
        });
      },
    });
    await chat.sendMessage(userMessage('/tool get_weather {"city": "Paris"}'));
    const events = await until(
      () => journal(chatId),
      (all) => all.some((event) => event.type === 'done'),
      'the turn to go on and end',
    );
    expect(seen).toEqual([{ toolName: 'get_weather', input: { city: 'Paris' } }]);
    expect(events.filter((event) => event.type === 'input_required')).toMatchObject([
      { kind: 'client_tool', tool: 'get_weather' },
    ]);
    expect(events.filter((event) => event.type === 'tool_result')).toMatchObject([
      { ok: true, result: 'sunny, 21 C' },
    ]);
    await until(
      async () => chat.status,
      (status) => status === 'ready',
      'the chat to settle',
    );
    const replies = chat.messages.filter((message) => message.role === 'assistant');
    expect(replies).toHaveLength(1);
    expect(textOf(replies[0] as UIMessage)).toContain('sunny, 21 C');
  });
});

describe('regenerate()', () => {
  it('is refused with the chat as it was: the reply stays, nothing is admitted', async () => {
    const chatId = (await client.createSession({})).session_id;
    const chat = new TestChat({ id: chatId, transport: new ParleyChatTransport({ client }) });
    await chat.sendMessage(userMessage('hello durable world'));
    expect(chat.status).toBe('ready');
    const before = chat.messages.map((message) => ({ id: message.id, text: textOf(message) }));
    expect(before[1]).toMatchObject({ text: 'You said: hello durable world' });
    const eventsBefore = await journal(chatId);

    await chat.regenerate();
    expect(chat.status).toBe('error');
    expect(chat.error?.message).toMatch(/append-only/);
    expect(chat.messages.map((message) => ({ id: message.id, text: textOf(message) }))).toEqual(
      before,
    );
    expect(await journal(chatId)).toEqual(eventsBefore);
  });
});

describe('the SSE stream', () => {
  it('begins with a retry: hint for EventSource-like clients', async () => {
    const chatId = (await client.createSession({})).session_id;
    const controller = new AbortController();
    const response = await fetch(`${server.url}/api/v1/chat/sessions/${chatId}/events`, {
      headers: { accept: 'text/event-stream' },
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('\n\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    controller.abort();
    expect(text.startsWith('retry: 1000\n\n')).toBe(true);
  });
});
