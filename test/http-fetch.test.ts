import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig } from '../src/config/load.js';
import { isInternalAddress } from '../src/tools/httpFetch/addresses.js';
import { createHttpFetch } from '../src/tools/httpFetch/index.js';
import type { Resolve } from '../src/tools/httpFetch/lookup.js';
import { runTool } from '../src/tools/registry.js';

// Local servers only: names are made to resolve to 127.0.0.1 by an injected resolver, so
// the allow-list is about names while the address check sees the real (loopback) address.

let server: Server;
let port: number;
const hits: string[] = [];

function route(request: IncomingMessage, response: ServerResponse): void {
  const url = new URL(request.url ?? '/', 'http://x');
  hits.push(`${request.headers.host} ${request.method} ${url.pathname}`);
  switch (url.pathname) {
    case '/page':
      response.setHeader('content-type', 'text/html; charset=utf-8');
      response.end(
        '<html><head><style>.x{color:red}</style><script>var secret = 1;</script></head>' +
          '<body><h1>Refund policy</h1><p>Within <b>30 days</b>.</p>' +
          '<ul><li>one</li><li>two</li></ul><a href="https://docs.test/more">More</a></body></html>',
      );
      return;
    case '/json':
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ ok: true }));
      return;
    case '/echo': {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        response.setHeader('content-type', 'text/plain');
        response.end(`${request.method} ${request.headers['content-type']} ${body}`);
      });
      return;
    }
    case '/redirect':
      response.statusCode = 302;
      response.setHeader('location', url.searchParams.get('to') ?? '/json');
      response.end();
      return;
    case '/big':
      response.setHeader('content-type', 'text/plain');
      response.end('z'.repeat(1_000_000));
      return;
    case '/binary':
      response.setHeader('content-type', 'image/png');
      response.end(Buffer.alloc(64, 1));
      return;
    case '/stall':
      response.setHeader('content-type', 'text/plain');
      response.write('starting...');
      // Never ends: the time cap must end the call.
      return;
    default:
      response.statusCode = 404;
      response.end('not here');
  }
}

beforeAll(async () => {
  server = createServer(route);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const names: Record<string, string> = {
  'docs.test': '127.0.0.1',
  'other.test': '127.0.0.1',
  'public.example': '127.0.0.1', // a public-looking name that resolves inward
};
const resolve: Resolve = async (hostname) => {
  const address = names[hostname];
  if (!address) throw new Error('ENOTFOUND');
  return [{ address, family: 4 }];
};
const tool = createHttpFetch(resolve);

function agentOptions(entry: Record<string, unknown>) {
  const config = compileConfig({ agents: { a: { tools: { http_fetch: entry } } } });
  return config.agents.a!.tools.http_fetch!;
}

async function fetchWith(
  entry: Record<string, unknown>,
  args: Record<string, unknown>,
  timeoutMs = 5000,
) {
  hits.length = 0;
  const options = agentOptions(entry).options;
  return runTool(tool, args, {
    signal: new AbortController().signal,
    timeoutMs,
    options,
    graceMs: 2000,
  });
}

const local = () => ({ allow_hosts: [`docs.test:${port}`], allow_private: true });

describe('http_fetch', () => {
  it('returns HTML as readable text, without scripts or styles', async () => {
    const outcome = await fetchWith(local(), { url: `http://docs.test:${port}/page` });
    expect(outcome.ok).toBe(true);
    const result = (outcome as { result: Record<string, unknown> }).result;
    expect(result).toMatchObject({
      status: 200,
      truncated: false,
      url: `http://docs.test:${port}/page`,
    });
    const text = result.text as string;
    expect(text).toContain('REFUND POLICY');
    expect(text).toContain('Within 30 days.');
    expect(text).toMatch(/\* one\s+\* two/);
    expect(text).toContain('More [https://docs.test/more]');
    expect(text).not.toMatch(/secret|color|<\w/);
  });

  it('refuses a host off the allow-list without sending anything', async () => {
    for (const url of [
      `http://other.test:${port}/json`,
      `http://docs.test:${port + 1}/json`,
      `http://docs.test/json`,
    ]) {
      const outcome = await fetchWith(local(), { url });
      expect(outcome).toMatchObject({ ok: false, error: { code: 'not_allowed' } });
    }
    expect(hits).toEqual([]);
  });

  it('follows a redirect on the list and refuses one off the list', async () => {
    const allowed = await fetchWith(local(), { url: `http://docs.test:${port}/redirect?to=/json` });
    expect(allowed).toMatchObject({ ok: true, result: { status: 200, text: '{"ok":true}' } });
    const off = `http://other.test:${port}/json`;
    const refused = await fetchWith(local(), {
      url: `http://docs.test:${port}/redirect?to=${encodeURIComponent(off)}`,
    });
    expect(refused).toMatchObject({ ok: false, error: { code: 'not_allowed' } });
    expect((refused as { error: { message: string } }).error.message).toMatch(
      /other.test.*not followed/,
    );
    expect(hits).toEqual([`docs.test:${port} GET /redirect`]);
  });

  it('refuses a name that resolves to 127.0.0.1 unless allow_private', async () => {
    const entry = { allow_hosts: [`public.example:${port}`] };
    const outcome = await fetchWith(entry, { url: `http://public.example:${port}/json` });
    expect(outcome).toMatchObject({ ok: false, error: { code: 'not_allowed' } });
    expect((outcome as { error: { message: string } }).error.message).toContain('internal address');
    const literal = await fetchWith(
      { allow_hosts: [`127.0.0.1:${port}`] },
      { url: `http://127.0.0.1:${port}/json` },
    );
    expect(literal).toMatchObject({ ok: false, error: { code: 'not_allowed' } });
    expect(hits).toEqual([]);
    const allowed = await fetchWith(
      { ...entry, allow_private: true },
      { url: `http://public.example:${port}/json` },
    );
    expect(allowed).toMatchObject({ ok: true, result: { status: 200 } });
  });

  it('reads at most max_bytes of a body', async () => {
    const outcome = await fetchWith(
      { ...local(), max_bytes: 1000 },
      { url: `http://docs.test:${port}/big` },
    );
    expect(outcome).toMatchObject({ ok: true, result: { bytes: 1000, truncated: true } });
    expect((outcome as { result: { text: string } }).result.text).toBe('z'.repeat(1000));
  });

  it('stops at the time limit when the body never ends', async () => {
    const outcome = await fetchWith(local(), { url: `http://docs.test:${port}/stall` }, 300);
    expect(outcome).toMatchObject({ ok: false, error: { code: 'timeout' } });
  });

  it('sends POST only where the agent allows it', async () => {
    const url = `http://docs.test:${port}/echo`;
    const refused = await fetchWith(local(), { url, method: 'POST', body: '{"a":1}' });
    expect(refused).toMatchObject({ ok: false, error: { code: 'not_allowed' } });
    expect(hits).toEqual([]);
    const sent = await fetchWith(
      { ...local(), methods: ['GET', 'POST'] },
      { url, method: 'POST', body: '{"a":1}' },
    );
    expect(sent).toMatchObject({ ok: true, result: { text: 'POST application/json {"a":1}' } });
    const getWithBody = await fetchWith(local(), { url, body: 'x' });
    expect(getWithBody).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
  });

  it('refuses everything when a caller passes no allow-list', async () => {
    hits.length = 0;
    const outcome = await runTool(
      tool,
      { url: `http://docs.test:${port}/json` },
      {
        signal: new AbortController().signal,
        timeoutMs: 5000,
      },
    );
    expect(outcome).toMatchObject({ ok: false, error: { code: 'not_allowed' } });
    expect(hits).toEqual([]);
  });

  it('does not return binary bodies as text, and refuses other schemes', async () => {
    const binary = await fetchWith(local(), { url: `http://docs.test:${port}/binary` });
    expect(binary).toMatchObject({
      ok: true,
      result: { text: null, bytes: 64, content_type: 'image/png' },
    });
    const file = await fetchWith(local(), { url: 'file:///etc/passwd' });
    expect(file).toMatchObject({ ok: false, error: { code: 'not_allowed' } });
  });
});

describe('internal addresses', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '64:ff9b::a9fe:a9fe',
    '[::1]',
    'not-an-ip',
  ])('%s is internal', (address) => {
    expect(isInternalAddress(address)).toBe(true);
  });

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8'])(
    '%s is public',
    (address) => {
      expect(isInternalAddress(address)).toBe(false);
    },
  );
});
