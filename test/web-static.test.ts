import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/api/app.js';
import { createLogger } from '../src/log.js';
import { Wakeups } from '../src/store/wakeups.js';
import { startTestServer, type TestServer } from './support/server.js';

// The web app is served by the API process itself (src/api/web.ts). A fake build in a
// temp folder stands in for dist/web, so these tests pin the handler, not the app.
let server: TestServer;
let app: FastifyInstance;
let bare: FastifyInstance;
const webDir = mkdtempSync(join(tmpdir(), 'parley-web-'));
const script = 'console.log("app");\n'.repeat(20);

beforeAll(async () => {
  mkdirSync(join(webDir, 'assets'));
  writeFileSync(join(webDir, 'index.html'), '<!doctype html><title>Parley</title>');
  writeFileSync(join(webDir, 'assets', 'index-Ab12Cd.js'), script);
  writeFileSync(join(webDir, 'assets', 'index-Ab12Cd.js.gz'), gzipSync(script));
  writeFileSync(join(webDir, 'assets', 'index-Ef34.css'), 'body{margin:0}');
  writeFileSync(join(webDir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  server = await startTestServer(
    {
      auth: { keys: [{ key_env: 'K', tenant: 't', user: 'u', roles: [] }] },
    },
    { K: 'key' },
  );
  const deps = {
    db: server.db,
    wakeups: new Wakeups(server.db),
    config: server.config,
    log: createLogger({ level: 'silent' }),
    providersReady: () => true,
  };
  app = await buildApp({ ...deps, webDir });
  bare = await buildApp({ ...deps, webDir: join(webDir, 'missing') });
});
afterAll(async () => {
  await app.close();
  await bare.close();
  await server.close();
  rmSync(webDir, { recursive: true, force: true });
});

describe('the web app, served at /', () => {
  it('serves index.html at / and at client-side routes, without a key, never cached', async () => {
    for (const url of ['/', '/s/01ABC', '/inbox', '/s/01ABC?x=1']) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.headers['cache-control']).toBe('no-cache');
      expect(response.headers['content-security-policy']).toContain("script-src 'self'");
      // Speech the app fetched plays from a blob: URL (test/web-media.pglite.test.ts).
      expect(response.headers['content-security-policy']).toContain("media-src 'self' blob:");
      expect(response.body).toContain('<title>Parley</title>');
    }
  });

  it('serves hashed assets with their content type, cached for good, gzipped when asked', async () => {
    const plain = await app.inject({ method: 'GET', url: '/assets/index-Ab12Cd.js' });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body).toBe(script);

    const gzipped = await app.inject({
      method: 'GET',
      url: '/assets/index-Ab12Cd.js',
      headers: { 'accept-encoding': 'gzip, deflate' },
    });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.rawPayload.length).toBeLessThan(script.length);

    const css = await app.inject({ method: 'GET', url: '/assets/index-Ef34.css' });
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    const icon = await app.inject({ method: 'GET', url: '/favicon.svg' });
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it('answers a missing asset with a JSON 404, not with the app', async () => {
    const response = await app.inject({ method: 'GET', url: '/assets/gone-123.js' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ error: 'not_found' });
  });

  it('never climbs out of its folder', async () => {
    for (const url of ['/../package.json', '/assets/..%2F..%2Fpackage.json', '/%2e%2e/x.js']) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.body).not.toContain('"name"');
    }
  });

  it('keeps JSON errors for unknown API paths, and the API behind its key', async () => {
    for (const url of ['/api/v1/nope', '/api/v2/chat/sessions', '/metrics/x']) {
      const response = await app.inject({ method: 'GET', url });
      const body = response.json();
      expect(response.statusCode, url).toBe(404);
      expect(body).toEqual({ error: 'not_found', message: 'no such endpoint' });
    }
    // Where clients of other protocols look, and any client that asks for JSON: a coded
    // 404, never the app's page (an OpenAI client would read it as an empty model list).
    for (const url of ['/v1/models', '/openai/v1/nope', '/mcp/x', '/a2a/x/nope', '/ag-ui/x']) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.json(), url).toEqual({ error: 'not_found', message: 'no such endpoint' });
    }
    const json = await app.inject({
      method: 'GET',
      url: '/models',
      headers: { accept: 'application/json' },
    });
    expect(json.statusCode).toBe(404);
    expect(json.json().error).toBe('not_found');
    // A browser's navigation still gets the app, at paths that merely start alike too.
    for (const url of ['/inbox', '/v1x', '/mcpdesk']) {
      const page = await app.inject({
        method: 'GET',
        url,
        headers: { accept: 'text/html,application/xhtml+xml,application/json;q=0.9,*/*;q=0.8' },
      });
      expect(page.statusCode, url).toBe(200);
      expect(page.headers['content-type'], url).toContain('text/html');
    }
    const post = await app.inject({
      method: 'POST',
      url: '/anything',
      payload: {},
      headers: { authorization: 'Bearer key' },
    });
    expect(post.statusCode).toBe(404);
    expect(post.json().error).toBe('not_found');
    const sessions = await app.inject({ method: 'GET', url: '/api/v1/chat/sessions' });
    expect(sessions.statusCode).toBe(401);
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    expect(health.json()).toEqual({ status: 'ok' });
  });

  it('says how to build the app when it is not built', async () => {
    const response = await bare.inject({ method: 'GET', url: '/' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ error: 'not_found' });
    expect(response.json().message).toContain('npm run build');
  });
});
