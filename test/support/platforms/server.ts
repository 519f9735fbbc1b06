import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeCall {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
  /** The body, parsed: JSON, form fields, or the raw text. */
  body: any;
}

export interface FakeAnswer {
  status?: number;
  json?: unknown;
  /** A body of bytes (a file download) instead of JSON; `headers` says its type. */
  raw?: Buffer;
  headers?: Record<string, string>;
}

export type FakeRoute = (call: FakeCall) => FakeAnswer | Promise<FakeAnswer>;

/**
 * A local HTTP server playing a chat platform's API for one test file: routes by
 * `METHOD path` (a path may end in `*`), every call recorded. Faults are scripted per
 * route: `fail(route, n)` answers the next n calls with an error, `hold(route)` never
 * answers until `release()` (a call in flight when a process is killed), `late(route, n,
 * ms)` does what the next n calls ask at once but answers only `ms` later (a platform
 * that acted on a request whose answer comes too late), `slow(route, n, ms)` does it only
 * `ms` after the call came, whether its client still waits or not (a platform that took a
 * request and carries it out late).
 */
export class FakePlatform {
  readonly calls: FakeCall[] = [];
  /** Calls whose client closed the connection before it was answered (an aborted request). */
  readonly abandoned: FakeCall[] = [];
  url = '';
  private server: Server | null = null;
  private readonly routes: [string, FakeRoute][] = [];
  private readonly failures = new Map<string, { left: number; status: number; json: unknown }>();
  private readonly held = new Set<string>();
  private readonly delays = new Map<string, { left: number; ms: number }>();
  private readonly slowed = new Map<string, { left: number; ms: number }>();
  private readonly waiting: { route: string; wake: () => void }[] = [];

  static async start(): Promise<FakePlatform> {
    const fake = new FakePlatform();
    fake.server = createServer((request, response) => {
      void fake.collect(request).then(async (call) => {
        response.on('close', () => {
          if (!response.writableEnded) fake.abandoned.push(call);
        });
        const answer = await fake.answer(call);
        if (answer === null) return; // held: the socket is left open (or destroyed by close)
        const delay = fake.delayOf(call);
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
        if (response.destroyed) return; // the client gave up waiting
        response.writeHead(answer.status ?? 200, {
          'content-type': 'application/json',
          ...answer.headers,
        });
        if (answer.raw !== undefined) response.end(answer.raw);
        else response.end(answer.json === undefined ? '' : JSON.stringify(answer.json));
      });
    });
    await new Promise<void>((resolve) => fake.server?.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  on(route: string, handler: FakeRoute): this {
    this.routes.push([route, handler]);
    return this;
  }

  /** The next `times` calls of `route` fail with `status` (and `json`). */
  fail(route: string, times: number, status = 500, json: unknown = { error: 'unavailable' }) {
    this.failures.set(route, { left: times, status, json });
  }

  /** The next `times` calls of `route` are carried out at once and answered `ms` later. */
  late(route: string, times: number, ms: number): void {
    this.delays.set(route, { left: times, ms });
  }

  /** The next `times` calls of `route` are carried out (and answered) `ms` after they came. */
  slow(route: string, times: number, ms: number): void {
    this.slowed.set(route, { left: times, ms });
  }

  hold(route: string): void {
    this.held.add(route);
  }

  release(): void {
    this.held.clear();
    for (const { wake } of this.waiting.splice(0)) wake();
  }

  /** Calls of `route` being held now. */
  heldCount(route: string): number {
    return this.waiting.filter((waiting) => waiting.route === route).length;
  }

  callsTo(route: string): FakeCall[] {
    return this.calls.filter((call) => matches(route, call));
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private delayOf(call: FakeCall, delays = this.delays): number {
    for (const [route, delay] of delays) {
      if (matches(route, call) && delay.left > 0) {
        delay.left -= 1;
        return delay.ms;
      }
    }
    return 0;
  }

  private async collect(request: IncomingMessage): Promise<FakeCall> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const type = String(request.headers['content-type'] ?? '');
    let body: unknown = text;
    if (type.includes('json') && text !== '') body = JSON.parse(text);
    else if (type.includes('x-www-form-urlencoded')) {
      body = Object.fromEntries(new URLSearchParams(text));
    }
    const url = new URL(request.url ?? '/', 'http://fake');
    return {
      method: request.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      body,
    };
  }

  private async answer(call: FakeCall): Promise<FakeAnswer | null> {
    const held = [...this.held].find((route) => matches(route, call));
    if (held !== undefined) {
      await new Promise<void>((resolve) => this.waiting.push({ route: held, wake: resolve }));
      return null;
    }
    const slow = this.delayOf(call, this.slowed);
    if (slow > 0) await new Promise((resolve) => setTimeout(resolve, slow));
    this.calls.push(call);
    for (const [route, failure] of this.failures) {
      if (matches(route, call) && failure.left > 0) {
        failure.left -= 1;
        return { status: failure.status, json: failure.json };
      }
    }
    const route = this.routes.find(([pattern]) => matches(pattern, call));
    if (!route) return { status: 404, json: { error: 'no such fake route' } };
    return route[1](call);
  }
}

function matches(route: string, call: FakeCall): boolean {
  const [method, path = ''] = route.split(' ');
  if (method !== call.method) return false;
  return path.endsWith('*') ? call.path.startsWith(path.slice(0, -1)) : call.path === path;
}
