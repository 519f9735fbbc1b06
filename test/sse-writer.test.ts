import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SseWriter } from '../src/api/sseWriter.js';
import { until } from './support/poll.js';

// Every Parley event stream (a session's journal, the user stream, the OpenAI, AG-UI and
// A2A adapters) writes through SseWriter: here on a real socket whose client never reads.
let server: Server | null = null;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
  server = null;
});

async function serve(
  handler: (response: ServerResponse) => void,
): Promise<{ port: number; open: () => number }> {
  let open = 0;
  server = createServer((_request, response) => {
    open++;
    response.on('close', () => open--);
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    handler(response);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, open: () => open };
}

function pausedClient(port: number) {
  const socket = connect(port, '127.0.0.1', () => {
    socket.write('GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');
    socket.pause();
  });
  socket.on('error', () => {});
  return socket;
}

describe('SseWriter', () => {
  it('drops a client that leaves more than the bound unread, and writes nothing after', async () => {
    let dropped = 0;
    let destroyedOnDrop = 0;
    const frame = `data: ${'x'.repeat(16 * 1024)}\n\n`;
    const { port, open } = await serve((response) => {
      const stream = new SseWriter(response, {
        bufferBytes: 256 * 1024,
        keepaliveMs: 60_000,
        onDrop: () => dropped++,
      });
      // Far more than the socket and the bound hold: 32 MiB.
      for (let index = 0; index < 2048; index++) {
        stream.write(frame);
        if (dropped > 0) {
          if (response.destroyed) destroyedOnDrop++;
          break;
        }
      }
      expect(response.writableLength).toBeLessThanOrEqual(256 * 1024 + frame.length);
    });
    const socket = pausedClient(port);
    await until(
      async () => ({ dropped, open: open() }),
      (state) => state.dropped === 1 && state.open === 0,
      'the paused client dropped',
    );
    expect(destroyedOnDrop).toBe(1);
    socket.destroy();
  });

  it('keeps a reader alive with comments, and ends a stalled one after two intervals', async () => {
    let dropped = 0;
    const writers: Promise<void>[] = [];
    const { port, open } = await serve((response) => {
      const stream = new SseWriter(response, {
        bufferBytes: 64 * 1024 * 1024,
        keepaliveMs: 100,
        onDrop: () => dropped++,
      });
      const stop = stream.keepAlive();
      response.on('close', stop);
      // A writer that waits for its reader: once the kernel's buffers are full too, it
      // waits for a reader that never comes.
      writers.push(
        (async () => {
          while (!response.destroyed) {
            if (!stream.write(`data: ${'y'.repeat(64 * 1024)}\n\n`)) await stream.drained();
          }
        })(),
      );
    });
    const socket = pausedClient(port);
    await until(
      async () => ({ dropped, open: open(), writing: writers.length > 0 }),
      (state) => state.writing && state.dropped === 1 && state.open === 0,
      'the stalled reader dropped',
    );
    // The waiting writer was let go.
    await Promise.all(writers);
    socket.destroy();

    // A reader that reads gets the keep-alive comments.
    const { port: second } = await serve((response) => {
      const stream = new SseWriter(response, {
        bufferBytes: 1024,
        keepaliveMs: 50,
        onDrop: () => dropped++,
      });
      const stop = stream.keepAlive();
      response.on('close', stop);
    });
    const controller = new AbortController();
    const answer = await fetch(`http://127.0.0.1:${second}/`, { signal: controller.signal });
    const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    while ((text.match(/: keep-alive\n\n/g) ?? []).length < 2) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    expect(dropped).toBe(1);
  });
});
