import { readEvents } from '../src/store/readEvents.js';
import { spawnSync } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkJournalInvariants } from './support/invariants.js';
import { request, startTestServer, type TestServer } from './support/server.js';
import { chatTerminals } from './support/terminal.js';

const {
  socket: tmuxSocket,
  terminals,
  tmux,
  alive,
  screen,
  startChat,
  type,
  until,
} = chatTerminals({
  prefix: 'parley-approvals',
  width: 160,
  height: 50,
});

/**
 * `parley chat` answering approvals and questions (PROTOCOL.md §4, §7.6) in a real
 * pseudo-terminal: tmux runs the built command (dist/, built by the global setup), the
 * test types keys and reads the screen. A private tmux socket keeps this file's terminals
 * apart from anything else on the machine. The server runs in single-user dev mode, so
 * every answer is given by the principal `local`.
 */

const approvalPrompt = 'approve? y/n, optionally followed by a reason:';
const questionPrompt = 'your answer:';
const calculate = '/tool calculator {"expression": "6*7"}';
/** The demo model quotes the tool's result as it was recorded. */
const reply42 = 'assistant: Tool calculator returned: {"expression":"6*7","result":42}';
let server: TestServer;

function waitForText(name: string, text: string): Promise<void> {
  return until(() => screen(name).includes(text), `"${text}"`, name);
}

/** The screen's lines. */
function lines(name: string): string[] {
  return screen(name).split('\n');
}

/** How many lines of the screen contain `text`. */
function countLines(name: string, text: string): number {
  return lines(name).filter((line) => line.includes(text)).length;
}

/** Lines of the screen after the last line that contains `marker`. */
function linesAfterLast(name: string, marker: string): string[] {
  const all = lines(name);
  for (let index = all.length - 1; index >= 0; index--) {
    if (all[index]?.includes(marker)) return all.slice(index + 1);
  }
  return [];
}

/** Waits until `text` shows on a line below the last line containing `marker`. */
function waitForTextAfter(name: string, marker: string, text: string): Promise<void> {
  return until(
    () => linesAfterLast(name, marker).some((line) => line.includes(text)),
    `"${text}" after "${marker}"`,
    name,
  );
}

/** Waits until the `count`-th line containing `text` has appeared. */
function waitForCount(name: string, text: string, count: number): Promise<void> {
  return until(() => countLines(name, text) >= count, `${count} × "${text}"`, name);
}

async function journal(sessionId: string): Promise<Record<string, any>[]> {
  return readEvents(server.db, sessionId, 0, 100_000) as Promise<Record<string, any>[]>;
}

async function waitIdle(sessionId: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    if (projection.body.state === 'idle' && projection.body.queued_turns === 0) {
      return projection.body as Record<string, any>;
    }
    if (Date.now() > deadline) throw new Error(`session ${sessionId} never became idle`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A new session, and a chat in it that is connected and at the `you>` prompt. */
async function openChat(title: string): Promise<{ chat: string; sessionId: string }> {
  const created = await request(server.url, 'POST', '/api/v1/chat/sessions', { title });
  expect(created.status).toBe(201);
  const sessionId = created.body.session_id as string;
  const chat = startChat(['--url', server.url, '--session', sessionId]);
  await waitForText(chat, '-- connected');
  await waitForText(chat, 'you>');
  return { chat, sessionId };
}

beforeAll(async () => {
  server = await startTestServer(
    {
      agents: {
        default: {
          model: 'demo/echo',
          tools: { calculator: 'approve', clock: 'allow', ask_user: 'allow' },
        },
      },
    },
    { PARLEY_DEMO_DELAY_MS: '20' },
  );
});

afterEach(() => {
  for (const name of terminals.splice(0)) {
    if (alive(name)) tmux('kill-session', '-t', name);
  }
});

afterAll(async () => {
  spawnSync('tmux', ['-L', tmuxSocket, 'kill-server']);
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

describe('parley chat: approvals and questions', () => {
  it('asks for each approval: "n" with a reason rejects it, "y" approves it and the reply quotes 42', async () => {
    const { chat, sessionId } = await openChat('approvals');

    // 1. Rejected, with a reason.
    type(chat, calculate);
    await waitForText(chat, '-- approval needed: calculator {"expression":"6*7"}');
    await waitForTextAfter(chat, '-- approval needed: calculator', approvalPrompt);
    // Nothing runs while the person decides.
    const waiting = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(waiting.body).toMatchObject({
      state: 'input_required',
      pending_input: { kind: 'approval', tool: 'calculator' },
    });

    type(chat, 'n too risky');
    await waitForText(chat, '-- rejection sent');
    await waitForText(chat, '-- rejected by local');
    await waitForText(chat, 'assistant: Tool calculator failed: rejected by local: too risky');
    await waitForTextAfter(
      chat,
      'assistant: Tool calculator failed: rejected by local: too risky',
      'you>',
    );
    expect(screen(chat)).not.toContain('"result":42');

    let events = await journal(sessionId);
    expect(events.filter((event) => event.type === 'input_resolved')).toEqual([
      expect.objectContaining({ approved: false, actor: { user: 'local', tenant: 'default' } }),
    ]);
    expect(events.filter((event) => event.type === 'tool_result')).toEqual([
      expect.objectContaining({
        tool: 'calculator',
        ok: false,
        error: { code: 'rejected', message: 'rejected by local: too risky' },
      }),
    ]);
    await waitIdle(sessionId);

    // 2. The same request again, approved this time.
    type(chat, calculate);
    await waitForCount(chat, '-- approval needed: calculator {"expression":"6*7"}', 2);
    await waitForTextAfter(chat, '-- approval needed: calculator', approvalPrompt);
    type(chat, 'y');
    await waitForText(chat, '-- approval sent');
    await waitForText(chat, '-- approved by local');
    await waitForText(chat, reply42);
    await waitForTextAfter(chat, reply42, 'you>');

    events = await journal(sessionId);
    const resolved = events.filter((event) => event.type === 'input_resolved');
    expect(resolved.map((event) => event.approved)).toEqual([false, true]);
    const results = events.filter((event) => event.type === 'tool_result');
    expect(results).toHaveLength(2);
    expect(results[1]).toMatchObject({ tool: 'calculator', ok: true, result: { result: 42 } });
    expect(events.filter((event) => event.type === 'done')).toHaveLength(2);
    await waitIdle(sessionId);
    expect(screen(chat)).not.toContain('the stream stopped');
    expect(screen(chat)).not.toContain('not needed any more');
  });

  it('does not take an answer that is neither yes nor no: it asks again', async () => {
    const { chat, sessionId } = await openChat('unclear answer');
    type(chat, calculate);
    await waitForTextAfter(chat, '-- approval needed: calculator', approvalPrompt);
    type(chat, 'maybe later');
    // Still waiting: nothing was sent, and the request is still pending.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body.state).toBe('input_required');
    expect(screen(chat)).not.toContain('-- approval sent');
    expect(screen(chat)).not.toContain('-- rejection sent');
    expect(linesAfterLast(chat, 'maybe later').join('\n')).toContain(approvalPrompt);

    type(chat, 'yes');
    await waitForText(chat, '-- approval sent');
    await waitForText(chat, reply42);
    await waitIdle(sessionId);
  });

  it('asks an ask_user question; the text typed is the answer the model receives', async () => {
    const { chat, sessionId } = await openChat('question');
    type(chat, '/tool ask_user {"question": "Which colour?"}');
    await waitForText(chat, '-- the assistant asks: Which colour?');
    await waitForTextAfter(chat, '-- the assistant asks: Which colour?', questionPrompt);
    // A question is not a yes/no approval.
    expect(linesAfterLast(chat, '-- the assistant asks').join('\n')).not.toContain(approvalPrompt);

    type(chat, 'a deep blue');
    await waitForText(chat, 'assistant: Tool ask_user returned: {"answer":"a deep blue"}');
    await waitForTextAfter(
      chat,
      'assistant: Tool ask_user returned: {"answer":"a deep blue"}',
      'you>',
    );

    const events = await journal(sessionId);
    expect(events.find((event) => event.type === 'input_required')).toMatchObject({
      kind: 'question',
      prompt: 'Which colour?',
    });
    expect(events.filter((event) => event.type === 'tool_result')).toEqual([
      expect.objectContaining({ tool: 'ask_user', ok: true, result: { answer: 'a deep blue' } }),
    ]);
    await waitIdle(sessionId);

    // The chat goes on as usual afterwards.
    type(chat, 'thanks');
    await waitForText(chat, 'assistant: You said: thanks');
  });

  it('shows a request another participant superseded as expired, and goes on', async () => {
    const { chat, sessionId } = await openChat('superseded');
    type(chat, calculate);
    await waitForText(chat, '-- approval needed: calculator {"expression":"6*7"}');
    await waitForTextAfter(chat, '-- approval needed: calculator', approvalPrompt);
    // Someone else's message supersedes the waiting approval (pending_input: supersede):
    // the request expires with no actor, which the chat must show, not trip over.
    const superseding = await request(server.url, 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: `superseding_${Date.now()}`,
      message: 'never mind that',
    });
    expect(superseding.status).toBe(202);
    await waitForText(chat, '-- request expired (superseded): nothing ran');
    await waitForText(chat, 'assistant: You said: never mind that');
    expect(alive(chat)).toBe(true);
    const events = await journal(sessionId);
    expect(events.find((event) => event.type === 'input_resolved')).toMatchObject({
      approved: false,
      expired: 'superseded',
      actor: null,
    });
    await waitIdle(sessionId);
  });
});
