import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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
  prefix: 'parley-chat',
  width: 120,
  height: 40,
});

/**
 * `parley chat` driven through a real pseudo-terminal: tmux runs the built command
 * (dist/, built by the global setup), the test types keys and reads the screen. A private
 * tmux socket keeps this file's terminals apart from anything else on the machine.
 *
 * The chat reaches the server through a small TCP proxy that the test can cut, to show
 * what a user sees when the connection drops.
 */

let server: TestServer;
let proxy: CuttableProxy;
let proxyUrl: string;

function waitForText(name: string, text: string | RegExp): Promise<void> {
  const matches = (screenText: string) =>
    typeof text === 'string' ? screenText.includes(text) : text.test(screenText);
  return until(() => matches(screen(name)), `"${String(text)}"`, name);
}

/** Lines of the screen after the first line that contains `marker`. */
function linesAfter(name: string, marker: string): string[] {
  const lines = screen(name).split('\n');
  const index = lines.findIndex((line) => line.includes(marker));
  return index < 0 ? [] : lines.slice(index + 1);
}

async function waitIdle(sessionId: string): Promise<void> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const projection = await request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    if (projection.body.state === 'idle' && projection.body.queued_turns === 0) return;
    if (Date.now() > deadline) throw new Error(`session ${sessionId} never became idle`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A TCP proxy in front of the server whose connections the test can cut and restore. */
class CuttableProxy {
  private readonly sockets = new Set<net.Socket>();
  private accepting = true;
  private readonly server: net.Server;

  constructor(targetPort: number) {
    this.server = net.createServer((client) => {
      client.on('error', () => {});
      if (!this.accepting) {
        client.destroy();
        return;
      }
      const upstream = net.connect(targetPort, '127.0.0.1');
      upstream.on('error', () => {});
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((done) => this.server.listen(0, '127.0.0.1', done));
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Drops every open connection and refuses new ones until restore(). */
  cut(): void {
    this.accepting = false;
    for (const socket of this.sockets) socket.destroy();
  }

  restore(): void {
    this.accepting = true;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((done) => this.server.close(() => done()));
  }
}

beforeAll(async () => {
  server = await startTestServer(
    { agents: { default: { model: 'demo/echo', greeting: 'Hi, I am the demo agent.' } } },
    { PARLEY_DEMO_DELAY_MS: '100' },
  );
  proxy = new CuttableProxy(Number(new URL(server.url).port));
  proxyUrl = await proxy.listen();
});

afterEach(() => {
  proxy.restore();
  for (const name of terminals.splice(0)) {
    if (alive(name)) tmux('kill-session', '-t', name);
  }
});

afterAll(async () => {
  spawnSync('tmux', ['-L', tmuxSocket, 'kill-server']);
  await proxy?.close();
  await server?.close();
});

describe('parley chat in a terminal', () => {
  it('starts a new session on an empty server, streams the reply and says what it is doing', async () => {
    const chat = startChat(['--url', proxyUrl]);
    await waitForText(chat, /-- new session \w+ \(agent default\)/);
    await waitForText(chat, `-- connecting to ${proxyUrl}`);
    await waitForText(chat, '-- connected');
    await waitForText(chat, 'assistant: Hi, I am the demo agent.');
    await waitForText(chat, 'you>');

    type(chat, 'hello from a real terminal');
    await waitForText(chat, 'assistant: You said: hello from a real terminal');
    // The reply is one line, and the prompt comes back after it.
    await until(
      () =>
        linesAfter(chat, 'assistant: You said: hello from a real terminal')
          .join('\n')
          .includes('you>'),
      'the prompt after the reply',
      chat,
    );
    expect(screen(chat)).not.toContain('the stream stopped');
  });

  it('shows the connection dropping, coming back, and a resync when history was pruned meanwhile', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', { title: 'drop' });
    const sessionId = created.body.session_id as string;
    const chat = startChat(['--url', proxyUrl, '--session', sessionId]);
    await waitForText(chat, '-- connected');
    await waitForText(chat, 'you>');

    proxy.cut();
    await waitForText(chat, /-- connection lost \(.+\); reconnecting in \d+\.\d s/);

    // While this terminal is away, another client's turn completes and history is pruned.
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      session_id: sessionId,
      turn_id: 'turn_while_away',
      message: 'said while you were away',
    });
    expect(admitted.status).toBe(202);
    await waitIdle(sessionId);
    const pruned = await request(server.url, 'POST', '/api/v1/admin/prune', {
      older_than_seconds: 0,
    });
    expect(pruned.status).toBe(200);

    proxy.restore();
    await waitForText(chat, /-- resynced: history up to sequence \d+/);
    // What was missed is shown from the transcript, after the resync line.
    await until(
      () =>
        linesAfter(chat, '-- resynced')
          .join('\n')
          .includes('assistant: You said: said while you were away'),
      'the missed reply after the resync line',
      chat,
    );
    await waitForText(chat, '-- reconnected');

    type(chat, 'back again');
    await waitForText(chat, 'assistant: You said: back again');
  });

  it('lists recent sessions to choose by number, shows the transcript, and quits on Ctrl-C when idle', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'turn_pick_me',
      message: 'pick me please',
    });
    await waitIdle(admitted.body.session_id);
    const chat = startChat(['--url', proxyUrl]);
    await waitForText(chat, 'Recent sessions:');
    await waitForText(chat, 'Choose a session [n]:');
    const line = screen(chat)
      .split('\n')
      .find((text) => text.includes(admitted.body.session_id));
    const number = /^\s*(\d+)\)/.exec(line ?? '')?.[1];
    expect(number, screen(chat)).toBeDefined();
    type(chat, number ?? '');

    await waitForText(chat, `-- session ${admitted.body.session_id}`);
    await waitForText(chat, 'local: pick me please');
    await waitForText(chat, 'assistant: You said: pick me please');
    await waitForText(chat, '-- connected');
    await waitForText(chat, 'you>');

    tmux('send-keys', '-t', chat, 'C-c');
    await until(() => !alive(chat), 'the chat to quit', chat);
  });

  it('on Ctrl-C during a turn asks the server to cancel it and stays; a second Ctrl-C quits', async () => {
    const chat = startChat(['--url', proxyUrl]);
    await waitForText(chat, 'Choose a session [n]:');
    type(chat, 'n');
    await waitForText(chat, '-- connected');
    await waitForText(chat, 'you>');
    const words = Array.from({ length: 80 }, (_, index) => `w${index}`).join(' ');
    type(chat, words);
    await waitForText(chat, 'assistant: You said: w0 w1');

    tmux('send-keys', '-t', chat, 'C-c');
    await waitForText(chat, '-- cancelling the turn (Ctrl-C again to quit)');
    expect(alive(chat)).toBe(true);

    tmux('send-keys', '-t', chat, 'C-c');
    await until(() => !alive(chat), 'the chat to quit', chat);
  });
});
