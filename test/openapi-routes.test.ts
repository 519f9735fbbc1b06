import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openapiDocument } from '../src/api/openapi.js';
import { registeredRoutes, routeShape } from '../src/api/routes.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * The OpenAPI document is the contract clients read: every route the app registers is in
 * it (method and path), and everything it documents exists. A route added without its
 * document entry fails here, naming it.
 */

/** Routes that are not part of the API, each with the reason. */
const undocumented = new Set([
  // The built web app's files and its client-side routes (docs/web.md): not an API.
  'GET /',
  'GET /*',
]);

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.close();
});

const methods = ['get', 'put', 'post', 'delete', 'patch'] as const;

function documented(): Set<string> {
  const found = new Set<string>();
  for (const [path, item] of Object.entries(openapiDocument.paths)) {
    for (const method of methods) {
      if (method in item) found.add(`${method.toUpperCase()} ${routeShape(path)}`);
    }
  }
  return found;
}

function registered(): string[] {
  if (!server.app) throw new Error('the test server has no API');
  return registeredRoutes(server.app).map((route) => `${route.method} ${routeShape(route.url)}`);
}

describe('the OpenAPI document and the registered routes', () => {
  it('records the routes of every plugin (sanity of the enumeration)', () => {
    const routes = registered();
    expect(routes).toContain('POST /api/v1/chat/turns');
    expect(routes).toContain('GET /api/v1/chat/sessions/{}/events');
    // Registered inside encapsulated plugins: the admin routes, the definitions, the platforms.
    expect(routes).toContain('POST /api/v1/admin/prune');
    expect(routes).toContain('PUT /api/v1/agents/{}');
    expect(routes).toContain('POST /adapters/telegram/webhook');
    expect(routes.some((route) => route.startsWith('HEAD '))).toBe(false);
  });

  it('documents every registered route', () => {
    const inDocument = documented();
    const missing = registered().filter(
      (route) => !inDocument.has(route) && !undocumented.has(route),
    );
    expect(missing, 'routes without a contract in src/api/openapi.ts').toEqual([]);
  });

  it('documents only routes that exist', () => {
    const routes = new Set(registered());
    const stale = [...documented()].filter((route) => !routes.has(route));
    expect(stale, 'documented operations with no route').toEqual([]);
  });

  it('serves that document', async () => {
    const served = await request(server.url, 'GET', '/api/v1/openapi.json');
    expect(served.status).toBe(200);
    expect(Object.keys(served.body.paths).sort()).toEqual(
      Object.keys(openapiDocument.paths).sort(),
    );
  });
});
