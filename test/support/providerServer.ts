import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const fixturesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'providers');

/** A fixture file's text (test/fixtures/providers/<kind>/<name>). */
export function fixture(path: string): string {
  return readFileSync(join(fixturesDir, path), 'utf8');
}

/** One scripted answer. A stream fixture is sent as `text/event-stream`. */
export interface Scripted {
  status?: number;
  headers?: Record<string, string>;
  /** A stream fixture (path under test/fixtures/providers), sent as SSE. */
  stream?: string;
  /** A JSON body (or a fixture path ending in .json, read from disk). */
  json?: unknown;
  /** Raw bytes (audio, say), sent with `headers` (give the content-type there). */
  bytes?: Uint8Array;
  /** Never answer (the client's timeout or abort must end the call). */
  hang?: boolean;
  /** Send the stream only up to the end of this text's first occurrence, then cut the socket. */
  cutAfter?: string;
  /**
   * Send the stream up to the end of the event holding this text's first occurrence, then
   * nothing more, keeping the connection open: a provider that stalls mid-stream.
   */
  stallAfter?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The client closed the connection before the answer was complete (it gave up). */
  abandoned: boolean;
}

/**
 * A local HTTP server that plays a provider: it replays the wire format written in
 * test/fixtures/providers (each provider's documented SSE), so the real AI SDK clients
 * parse real bytes over real HTTP. Answers are queued per `METHOD path`; the last one
 * repeats. Every request is recorded, for assertions on what the client sent.
 */
export class ProviderServer {
  readonly requests: RecordedRequest[] = [];
  private readonly routes = new Map<string, Scripted[]>();
  private server: Server | null = null;
  url = '';

  static async start(): Promise<ProviderServer> {
    const provider = new ProviderServer();
    provider.server = createServer((request, response) => {
      void provider.handle(request, response);
    });
    await new Promise<void>((resolve) => provider.server?.listen(0, '127.0.0.1', resolve));
    const address = provider.server.address() as AddressInfo;
    provider.url = `http://127.0.0.1:${address.port}`;
    return provider;
  }

  /** Queues answers for `METHOD path` (the path without its query string). */
  on(method: string, path: string, ...answers: Scripted[]): this {
    this.routes.set(`${method} ${path}`, answers);
    return this;
  }

  reset(): void {
    this.routes.clear();
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = new URL(request.url ?? '/', 'http://fixture');
    const recorded: RecordedRequest = {
      method: request.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      abandoned: false,
    };
    this.requests.push(recorded);
    response.on('close', () => {
      if (!response.writableFinished) recorded.abandoned = true;
    });
    const queue = this.routes.get(`${request.method} ${url.pathname}`);
    const answer = queue && queue.length > 1 ? queue.shift() : queue?.[0];
    if (!answer) {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: `no fixture for ${url.pathname}` } }));
      return;
    }
    if (answer.hang) return;
    if (answer.bytes !== undefined) {
      response.writeHead(answer.status ?? 200, answer.headers ?? {});
      response.end(answer.bytes);
      return;
    }
    if (answer.stream !== undefined) {
      const text = fixture(answer.stream);
      response.writeHead(answer.status ?? 200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        ...answer.headers,
      });
      if (answer.stallAfter !== undefined) {
        const at = text.indexOf(answer.stallAfter);
        if (at < 0) throw new Error(`stallAfter text not in ${answer.stream}`);
        response.write(text.slice(0, text.indexOf('\n\n', at) + 2));
        return;
      }
      if (answer.cutAfter !== undefined) {
        const end = text.indexOf(answer.cutAfter);
        if (end < 0) throw new Error(`cutAfter text not in ${answer.stream}`);
        response.write(text.slice(0, end + answer.cutAfter.length));
        // Let the bytes reach the client before the connection dies under it.
        await new Promise((resolve) => setTimeout(resolve, 20));
        response.socket?.destroy();
        return;
      }
      response.end(text);
      return;
    }
    const body =
      typeof answer.json === 'string' && answer.json.endsWith('.json')
        ? fixture(answer.json)
        : JSON.stringify(answer.json ?? {});
    response.writeHead(answer.status ?? 200, {
      'content-type': 'application/json',
      ...answer.headers,
    });
    response.end(body);
  }
}
