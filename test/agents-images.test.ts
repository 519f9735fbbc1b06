import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestServer, type TestServer } from './support/server.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    agents: {
      default: { model: 'demo/echo' },
      seer: { model: 'demo/vision' },
      blind: { model: 'demo/vision', vision: 'never' },
      insistent: { model: 'demo/echo', vision: 'always' },
      vouched: { model: 'demo/uncatalogued', vision: 'always' },
      guessing: { model: 'demo/uncatalogued' },
    },
  });
  // The catalog syncs at start too; syncing here makes the test independent of its timing.
  const synced = await request(server.url, 'POST', '/api/v1/admin/models/sync', {});
  expect(synced.status).toBe(200);
});
afterAll(async () => {
  await server.close();
});

describe('GET /api/v1/agents: accepts_images', () => {
  it('says whether an image reaches the model, by the agent’s vision policy and the catalog', async () => {
    const listed = await request(server.url, 'GET', '/api/v1/agents');
    expect(listed.status).toBe(200);
    const accepts = Object.fromEntries(
      listed.body.items.map((agent: { name: string; accepts_images: boolean }) => [
        agent.name,
        agent.accepts_images,
      ]),
    );
    expect(accepts).toEqual({
      default: false,
      seer: true,
      blind: false,
      insistent: false,
      vouched: true,
      guessing: false,
    });
  });
});
