import http from 'node:http';
import { now } from './remote.js';

/**
 * A lean HTTP client over node:http with a keep-alive agent, so that client-side timings
 * carry as little client overhead as possible (no fetch/undici layer). Every request
 * sends the protocol header, like a well-behaved client.
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** Drops the idle keep-alive sockets so the process can exit. */
export function closeClient(): void {
  agent.destroy();
}

export interface JsonResponse {
  status: number;
  body: any;
}

export function requestJson(
  base: URL,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? null : JSON.stringify(body);
    const request = http.request(
      {
        host: base.hostname,
        port: base.port,
        path,
        method,
        agent,
        headers: {
          'parley-protocol-version': '1',
          ...(payload === null
            ? {}
            : {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(payload),
              }),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON
          }
          resolve({ status: response.statusCode ?? 0, body: parsed });
        });
      },
    );
    request.on('error', reject);
    request.end(payload ?? undefined);
  });
}

/** A received SSE frame, with the client's receipt time (now(), per chunk). */
export interface Frame {
  id: string | null;
  event: string;
  data: any;
  receivedAt: number;
}

/**
 * An SSE subscriber (PROTOCOL.md §3) on its own connection. Frames are kept in arrival
 * order so a waiter can look from a mark taken before the request that causes them: a
 * frame that arrives before the waiter is registered is not missed.
 */
export class SseStream {
  readonly frames: Frame[] = [];
  private waiters = new Set<() => void>();
  private request: http.ClientRequest | null = null;
  private ended = false;

  static open(base: URL, sessionId: string, after = 0): Promise<SseStream> {
    const stream = new SseStream();
    return new Promise((resolve, reject) => {
      const request = http.get(
        {
          host: base.hostname,
          port: base.port,
          path: `/api/v1/chat/sessions/${sessionId}/events?after=${after}`,
          agent: false,
          headers: { accept: 'text/event-stream', 'parley-protocol-version': '1' },
        },
        (response) => {
          if (response.statusCode !== 200) {
            response.resume();
            reject(new Error(`SSE open answered ${response.statusCode}`));
            return;
          }
          let buffer = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            const receivedAt = now();
            buffer += chunk;
            let boundary: number;
            while ((boundary = buffer.indexOf('\n\n')) >= 0) {
              stream.parse(buffer.slice(0, boundary), receivedAt);
              buffer = buffer.slice(boundary + 2);
            }
            stream.notify();
          });
          const end = () => {
            stream.ended = true;
            stream.notify();
          };
          response.on('end', end);
          response.on('error', end);
          resolve(stream);
        },
      );
      request.on('error', (error) => {
        stream.ended = true;
        stream.notify();
        reject(error);
      });
      stream.request = request;
    });
  }

  /** The first frame at index ≥ `from` that satisfies `predicate`, waiting for it if needed. */
  async waitFor(
    predicate: (frame: Frame) => boolean,
    from = 0,
    timeoutMs = 30_000,
  ): Promise<Frame> {
    const deadline = now() + timeoutMs;
    let index = from;
    for (;;) {
      for (; index < this.frames.length; index++) {
        const frame = this.frames[index] as Frame;
        if (predicate(frame)) return frame;
      }
      if (this.ended) throw new Error('SSE stream ended before the awaited event');
      const left = deadline - now();
      if (left <= 0) throw new Error('timed out waiting for an SSE event');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        const waiters = this.waiters;
        function done() {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        waiters.add(done);
      });
    }
  }

  close(): void {
    this.request?.destroy();
  }

  private parse(block: string, receivedAt: number): void {
    let id: string | null = null;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length > 0) {
      this.frames.push({ id, event, data: JSON.parse(data.join('\n')), receivedAt });
    }
  }

  private notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}
