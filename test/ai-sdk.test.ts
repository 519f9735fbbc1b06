import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ChunkMapper,
  ParleyChatTransport,
  decodeApprovalId,
  isAbandonedPart,
  replyMessageId,
  toTurnId,
  toUIMessages,
  withoutAbandonedText,
} from '../src/ai-sdk/index.js';
import { ParleyClient, type ParleyEvent } from '../src/client/index.js';
import { until } from './support/poll.js';
import { startTestServer, type TestServer } from './support/server.js';
import { journalOf } from './support/journal.js';

// parley/ai-sdk against a real in-process Parley (API + worker): the chunks a useChat
// app receives, approvals through addToolApprovalResponse's message shape, resume after
// a reload, and stop() as a durable cancel.
let server: TestServer;
let client: ParleyClient;
let transport: ParleyChatTransport;
let counter = 0;

beforeAll(async () => {
  server = await startTestServer(
    {
      agents: { default: { model: 'demo/echo', tools: { calculator: 'approve', clock: 'allow' } } },
    },
    { PARLEY_DEMO_DELAY_MS: '25' },
  );
  client = new ParleyClient({ baseUrl: server.url });
  transport = new ParleyChatTransport({ client });
});
afterAll(async () => {
  await server.close();
});

async function newChat(): Promise<string> {
  return (await client.createSession({})).session_id;
}

function userMessage(text: string, id = `ui_${Date.now()}_${counter++}`): UIMessage {
  return { id, role: 'user', parts: [{ type: 'text', text }] };
}

async function collect(stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

/** Assembles chunks the way useChat does, into the final assistant message. */
async function assemble(chunks: UIMessageChunk[], message?: UIMessage): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const snapshot of readUIMessageStream({ stream, message })) last = snapshot;
  if (!last) throw new Error('no message');
  return last;
}

const textOf = (message: UIMessage) =>
  message.parts
    .filter((part) => part.type === 'text' && !isAbandonedPart(part))
    .map((part) => (part as { text: string }).text)
    .join('');

async function journal(sessionId: string): Promise<any[]> {
  return (await journalOf(server.db, sessionId)).map((row) => row.payload);
}

describe('ParleyChatTransport.sendMessages', () => {
  it('admits the last user message as a turn (its id as turn_id) and streams the reply', async () => {
    const chatId = await newChat();
    const message = userMessage('hello durable world');
    const chunks = await collect(
      await transport.sendMessages({
        chatId,
        messages: [message],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    expect(chunks[0]).toEqual({ type: 'start', messageId: replyMessageId(message.id) });
    expect(chunks.some((chunk) => chunk.type === 'text-delta')).toBe(true);
    expect(chunks[chunks.length - 1]).toMatchObject({ type: 'finish', finishReason: 'stop' });
    const reply = await assemble(chunks);
    expect(reply.id).toBe(replyMessageId(message.id));
    expect(textOf(reply)).toBe('You said: hello durable world');
    expect((reply.metadata as any).parley.usage.output_tokens).toBeGreaterThan(0);

    // A retried send (same UI message id) is the same turn, admitted and answered once:
    // the retry's stream replays that one reply from the journal.
    const again = await collect(
      await transport.sendMessages({
        chatId,
        messages: [message],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    expect(textOf(await assemble(again))).toBe('You said: hello durable world');
    const events = await journal(chatId);
    expect(
      events.filter((event) => event.type === 'message' && event.turn_id === message.id),
    ).toHaveLength(1);
    expect(events.filter((event) => event.type === 'done')).toHaveLength(1);
  });

  it('streams a proposed tool call as an approval request, then the outcome after the answer', async () => {
    const chatId = await newChat();
    const message = userMessage('/tool calculator {"expression": "6*7"}');
    const first = await collect(
      await transport.sendMessages({
        chatId,
        messages: [message],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    const call = first.find((chunk) => chunk.type === 'tool-input-available');
    expect(call).toMatchObject({
      toolName: 'calculator',
      input: { expression: '6*7' },
      dynamic: true,
    });
    const request = first.find((chunk) => chunk.type === 'tool-approval-request');
    expect(request).toBeDefined();
    const approvalId = (request as { approvalId: string }).approvalId;
    expect(decodeApprovalId(approvalId)).toMatchObject({ kind: 'approval', turnId: message.id });
    const waiting = await assemble(first);
    const part = waiting.parts.find((entry) => entry.type === 'dynamic-tool') as any;
    expect(part.state).toBe('approval-requested');

    // What addToolApprovalResponse leaves in the message, then the automatic send.
    const responded: UIMessage = {
      ...waiting,
      parts: waiting.parts.map((entry) =>
        entry.type === 'dynamic-tool'
          ? ({
              ...entry,
              state: 'approval-responded',
              approval: { id: approvalId, approved: true },
            } as any)
          : entry,
      ),
    };
    const rest = await collect(
      await transport.sendMessages({
        chatId,
        messages: [message, responded],
        trigger: 'submit-message',
        messageId: responded.id,
        abortSignal: undefined,
      }),
    );
    expect(rest[0]).toEqual({ type: 'start' });
    const done = await assemble(rest, responded);
    const tool = done.parts.find((entry) => entry.type === 'dynamic-tool') as any;
    expect(tool.state).toBe('output-available');
    expect(JSON.stringify(tool.output)).toContain('42');
    expect(textOf(done)).toContain('Tool calculator returned');
    const events = await journal(chatId);
    expect(events.filter((event) => event.type === 'input_resolved')).toHaveLength(1);
    expect(events.find((event) => event.type === 'input_resolved')).toMatchObject({
      approved: true,
    });
  });

  it('turns a rejection with a reason into a denied tool part', async () => {
    const chatId = await newChat();
    const message = userMessage('/tool calculator {"expression": "1+1"}');
    const first = await collect(
      await transport.sendMessages({
        chatId,
        messages: [message],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    const waiting = await assemble(first);
    const approvalId = (first.find((chunk) => chunk.type === 'tool-approval-request') as any)
      .approvalId;
    const responded: UIMessage = {
      ...waiting,
      parts: waiting.parts.map((entry) =>
        entry.type === 'dynamic-tool'
          ? ({
              ...entry,
              state: 'approval-responded',
              approval: { id: approvalId, approved: false, reason: 'not today' },
            } as any)
          : entry,
      ),
    };
    const rest = await collect(
      await transport.sendMessages({
        chatId,
        messages: [message, responded],
        trigger: 'submit-message',
        messageId: responded.id,
        abortSignal: undefined,
      }),
    );
    expect(rest.some((chunk) => chunk.type === 'tool-output-denied')).toBe(true);
    const events = await journal(chatId);
    expect(events.find((event) => event.type === 'tool_result').error).toMatchObject({
      message: expect.stringContaining('not today'),
    });
  });

  it('refuses regenerate: the journal is append-only', async () => {
    const chatId = await newChat();
    const chunks = await collect(
      await transport.sendMessages({
        chatId,
        messages: [userMessage('x')],
        trigger: 'regenerate-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    expect(chunks).toEqual([{ type: 'error', errorText: expect.stringMatching(/append-only/) }]);
    const events = await journal(chatId);
    expect(events.filter((event) => event.type === 'message')).toHaveLength(0);
  });
});

describe('ParleyChatTransport.reconnectToStream', () => {
  it('replays the running turn from its first event after a "reload", nothing twice', async () => {
    const chatId = await newChat();
    const words = Array.from({ length: 60 }, (_, index) => `w${index}`).join(' ');
    const message = userMessage(words);
    const controller = new AbortController();
    const live = await transport.sendMessages({
      chatId,
      messages: [message],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: controller.signal,
    });
    // Read a little, then "reload": the page and its stream are gone (no stop()).
    const reader = live.getReader();
    let seen = 0;
    while (seen < 5) {
      const { value } = await reader.read();
      if (value?.type === 'text-delta') seen++;
    }
    await reader.cancel();

    const fresh = new ParleyChatTransport({ client: new ParleyClient({ baseUrl: server.url }) });
    const resumed = await fresh.reconnectToStream({ chatId });
    expect(resumed).not.toBeNull();
    const chunks = await collect(resumed as ReadableStream<UIMessageChunk>);
    expect(chunks[0]).toEqual({ type: 'start', messageId: replyMessageId(message.id) });
    const reply = await assemble(chunks);
    expect(textOf(reply)).toBe(`You said: ${words}`);
    const events = await journal(chatId);
    expect(events.filter((event) => event.type === 'cancelled')).toHaveLength(0);

    // Finished: nothing to resume.
    expect(await fresh.reconnectToStream({ chatId })).toBeNull();
  });

  it('resumes a turn that waits for an approval, ending at the request', async () => {
    const chatId = await newChat();
    const message = userMessage('/tool calculator {"expression": "2+2"}');
    await collect(
      await transport.sendMessages({
        chatId,
        messages: [message],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    const resumed = await new ParleyChatTransport({ client }).reconnectToStream({ chatId });
    const chunks = await collect(resumed as ReadableStream<UIMessageChunk>);
    expect(chunks.filter((chunk) => chunk.type === 'tool-approval-request')).toHaveLength(1);
    expect(chunks.filter((chunk) => chunk.type === 'tool-input-available')).toHaveLength(1);
  });
});

describe('stop()', () => {
  it('cancels the turn durably, also on a resumed stream', async () => {
    const chatId = await newChat();
    const words = Array.from({ length: 200 }, (_, index) => `x${index}`).join(' ');
    const message = userMessage(words);
    await client.admitTurn({ sessionId: chatId, turnId: message.id, message: words });
    await until(
      () => journal(chatId),
      (events) => events.some((event) => event.type === 'text_delta'),
      'the reply to start',
    );
    const stopper = new AbortController();
    const resumed = await new ParleyChatTransport({ client }).reconnectToStream({
      chatId,
      abortSignal: stopper.signal,
    });
    const reader = (resumed as ReadableStream<UIMessageChunk>).getReader();
    await reader.read();
    stopper.abort();
    const events = await until(
      () => journal(chatId),
      (list) => list.some((event) => event.type === 'cancelled' || event.type === 'done'),
      'the turn to end',
    );
    expect(events.some((event) => event.type === 'cancelled')).toBe(true);
    expect(events.some((event) => event.type === 'done')).toBe(false);
  });

  it('does not cancel when a newer request for the same chat replaced the stream', async () => {
    const chatId = await newChat();
    const own = new ParleyChatTransport({ client });
    const words = Array.from({ length: 80 }, (_, index) => `y${index}`).join(' ');
    const message = userMessage(words);
    const first = new AbortController();
    await own.sendMessages({
      chatId,
      messages: [message],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: first.signal,
    });
    // useChat's resumeStream aborts the previous request and starts a new one at once.
    first.abort();
    const second = await own.reconnectToStream({ chatId });
    const chunks = await collect(second as ReadableStream<UIMessageChunk>);
    expect(chunks[chunks.length - 1]).toMatchObject({ type: 'finish' });
    const events = await journal(chatId);
    expect(events.some((event) => event.type === 'cancelled')).toBe(false);
  });
});

describe('chunks and messages', () => {
  const at = (sequence: number, event: Record<string, unknown>) =>
    ({ sequence, at: '', ...event }) as unknown as ParleyEvent;

  it('marks live text of an abandoned attempt, and a replay never contains it', () => {
    const events = [
      at(2, { type: 'turn_started', turn_id: 't1', attempt: 1, turn_ids: ['t1'] }),
      at(3, { type: 'text_delta', turn_id: 't1', delta: 'You said: hel' }),
      at(4, { type: 'attempt_reset', turn_id: 't1', attempt: 1 }),
      at(5, { type: 'turn_started', turn_id: 't1', attempt: 2, turn_ids: ['t1'] }),
      at(6, { type: 'text_delta', turn_id: 't1', delta: 'You said: hello' }),
      at(7, {
        type: 'done',
        turn_id: 't1',
        turn_ids: ['t1'],
        final_message: { id: 'm', role: 'assistant', content: 'You said: hello' },
      }),
    ];
    const live = new ChunkMapper('t1', 'new');
    const liveChunks = events.flatMap((event) => live.map(event));
    expect(liveChunks).toContainEqual({
      type: 'text-end',
      id: 'text_3',
      providerMetadata: { parley: { abandoned: true } },
    });
    const replay = new ChunkMapper('t1', 'new');
    const replayChunks = withoutAbandonedText(events).flatMap((event) => replay.map(event));
    const deltas = replayChunks.filter((chunk) => chunk.type === 'text-delta');
    expect(deltas).toEqual([{ type: 'text-delta', id: 'text_6', delta: 'You said: hello' }]);
  });

  it('skips other bursts, and maps ids and transcripts stably', () => {
    const mapper = new ChunkMapper('mine', 'new');
    expect(mapper.map(at(2, { type: 'text_delta', turn_id: 'other', delta: 'x' }))).toEqual([]);
    expect(toTurnId('abcDEF_12-3')).toBe('abcDEF_12-3');
    expect(toTurnId('has space/and:colon')).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(toTurnId('has space/and:colon')).toBe(toTurnId('has space/and:colon'));
    const messages = toUIMessages([
      {
        id: 'msg_2',
        role: 'assistant',
        author: 'default',
        content: 'hi',
        turn_id: 't',
        sequence: 5,
        created_at: '',
      },
      {
        id: 'msg_1',
        role: 'user',
        author: 'local',
        content: 'hey',
        turn_id: 't',
        sequence: 1,
        created_at: '',
      },
    ]);
    expect(messages.map((message) => message.id)).toEqual(['t', replyMessageId('t')]);
  });
});

describe('a post that runs no turn (trigger_roles)', () => {
  it('ends its stream at once instead of waiting for a reply that never comes', async () => {
    const room = await startTestServer(
      {
        auth: { keys: [{ key_env: 'K_GUEST', tenant: 't', user: 'guest', roles: ['viewer'] }] },
        agents: { default: { model: 'demo/echo', trigger_roles: ['member'] } },
      },
      { K_GUEST: 'guest-key' },
    );
    try {
      const guest = new ParleyClient({ baseUrl: room.url, apiKey: 'guest-key' });
      const chatId = (await guest.createSession({})).session_id;
      const chunks = await collect(
        await new ParleyChatTransport({ client: guest }).sendMessages({
          chatId,
          messages: [userMessage('just saying')],
          trigger: 'submit-message',
          messageId: undefined,
          abortSignal: undefined,
        }),
      );
      expect(chunks).toEqual([]);
    } finally {
      await room.close();
    }
  });
});
