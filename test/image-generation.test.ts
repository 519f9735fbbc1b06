import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ParleyEvent } from '../src/protocol/events.js';
import { createImageModelRegistry, priceImages } from '../src/providers/images.js';
import { readEvents } from '../src/store/readEvents.js';
import { generatedPhotoId } from '../src/tools/generateImage.js';
import { MemoryEffects } from '../src/tools/memory/effects.js';
import { builtInTools, runTool } from '../src/tools/registry.js';
import { callScope } from '../src/tools/scope.js';
import { reconcileCall } from '../src/tools/run.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Image generation on the engine the suite runs on: the demo model's `/image PROMPT` calls
// `generate_image`, whose demo image lands in the caller's photo library (origin
// `generated`, its source naming session, turn, call, model and prompt), is served as a
// PNG by the photos API, is named by the tool result, and is billed as a usage row. Bad
// arguments store nothing; a call run again stores nothing twice and makes no second
// model call.

let server: TestServer;
const keys = { alice: 'alice-key', bob: 'bob-key', admin: 'admin-key' };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
          { key_env: 'K_ADMIN', tenant: 'acme', user: 'ada', roles: ['admin'] },
        ],
      },
      // Tenants may list generate_image; which provider it bills stays the operator's.
      tenancy: { agent_policy: { tools: ['clock', 'generate_image'] } },
      providers: {
        demo: { kind: 'demo' },
        paid: { kind: 'openai', api_key_env: 'PAID_KEY' },
      },
      agents: {
        default: { model: 'demo/echo', visibility: 'private', tools: { generate_image: 'allow' } },
      },
    },
    { K_ALICE: keys.alice, K_BOB: keys.bob, K_ADMIN: keys.admin, PAID_KEY: 'sk-paid' },
  );
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

const count = async (sql: string, params: unknown[] = []) =>
  (await server.db.query<{ n: number }>(sql, params)).rows[0]?.n ?? 0;
const photoCount = () => count('select count(*)::int as n from photos');

async function sessionOf(key: string): Promise<string> {
  const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {}, auth(key));
  expect(created.status).toBe(201);
  return created.body.session_id as string;
}

let turns = 0;
/** Sends `message` and waits for its turn's `done`; the turn's id and the session's events. */
async function say(
  key: string,
  sessionId: string,
  message: string,
): Promise<{ turnId: string; events: ParleyEvent[] }> {
  const turnId = `image-turn-${++turns}`;
  const admitted = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    { session_id: sessionId, turn_id: turnId, message },
    auth(key),
  );
  expect(admitted.status).toBe(202);
  const events = await until(
    () => readEvents(server.db, sessionId, 0, 10_000),
    (events) => events.some((event) => event.type === 'done' && event.turn_ids.includes(turnId)),
    `the turn ${turnId} to finish`,
  );
  return { turnId, events };
}

type ToolResult = Extract<ParleyEvent, { type: 'tool_result' }>;
const resultsOf = (events: ParleyEvent[]) =>
  events.filter((event): event is ToolResult => event.type === 'tool_result');

async function content(
  key: string,
  url: string,
): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const response = await fetch(`${server.url}${url}`, {
    headers: { 'parley-protocol-version': '1', ...auth(key) },
  });
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

/** Signature, then an IHDR chunk of 13 bytes: width and height. */
function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(0, 8)).toEqual(
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  );
  expect(bytes.readUInt32BE(8)).toBe(13);
  expect(bytes.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

describe('/image PROMPT through a turn', () => {
  it('stores a generated PNG in the library, names it in the result and bills the call', async () => {
    const sessionId = await sessionOf(keys.alice);
    const { turnId, events } = await say(keys.alice, sessionId, '/image a red fox');
    const call = events.find(
      (event): event is Extract<ParleyEvent, { type: 'tool_call' }> =>
        event.type === 'tool_call' && event.tool === 'generate_image',
    );
    expect(call?.arguments).toEqual({ prompt: 'a red fox' });
    const [result] = resultsOf(events);
    expect(result).toMatchObject({ tool: 'generate_image', ok: true });
    const photos = (
      result as ToolResult & { result: { photos: { photo_id: string; content_url: string }[] } }
    ).result.photos;
    expect(photos).toHaveLength(1);
    const photoId = photos[0]!.photo_id;
    expect(photos[0]!.content_url).toBe(`/api/v1/photos/${photoId}/content`);

    // The reply quotes the result: the model was told the photo's id.
    const done = events.find((event) => event.type === 'done');
    expect(JSON.stringify(done)).toContain(photoId);

    const photo = await request(
      server.url,
      'GET',
      `/api/v1/photos/${photoId}`,
      undefined,
      auth(keys.alice),
    );
    expect(photo.status).toBe(200);
    expect(photo.body).toMatchObject({
      photo_id: photoId,
      owner: 'alice',
      origin: 'generated',
      media_type: 'image/png',
      source: {
        session_id: sessionId,
        turn_id: turnId,
        tool_call_id: call!.call_id,
        model: 'demo/image',
        prompt: 'a red fox',
      },
    });
    const image = await content(keys.alice, photos[0]!.content_url);
    expect(image.status).toBe(200);
    expect(image.type).toMatch(/^image\/png/);
    expect(pngSize(image.bytes)).toEqual({ width: 256, height: 256 });
    expect(image.bytes.length).toBe(photo.body.size);

    // Another user of the tenant does not see it.
    const other = await request(
      server.url,
      'GET',
      `/api/v1/photos/${photoId}`,
      undefined,
      auth(keys.bob),
    );
    expect(other.status).toBe(404);

    const usage = await server.db.query<{
      model: string;
      purpose: string;
      outcome: string;
      cost_usd: number;
      turn_id: string;
      user_name: string;
    }>(
      `select model, purpose, outcome, cost_usd, turn_id, user_name from usage
        where session_id = $1 and purpose = 'image'`,
      [sessionId],
    );
    expect(usage.rows).toEqual([
      {
        model: 'demo/image',
        purpose: 'image',
        outcome: 'ok',
        cost_usd: 0,
        turn_id: turnId,
        user_name: 'alice',
      },
    ]);

    // The same prompt in another conversation: another photo, the same bytes.
    const elsewhere = await sessionOf(keys.alice);
    const second = await say(keys.alice, elsewhere, '/image a red fox');
    const againId = (
      resultsOf(second.events)[0] as ToolResult & { result: { photos: { photo_id: string }[] } }
    ).result.photos[0]!.photo_id;
    expect(againId).not.toBe(photoId);
    const again = await content(keys.alice, `/api/v1/photos/${againId}/content`);
    expect(again.bytes.equals(image.bytes)).toBe(true);
  });

  it('answers invalid arguments with the tool error and stores nothing', async () => {
    const sessionId = await sessionOf(keys.alice);
    const before = await photoCount();
    const { events } = await say(
      keys.alice,
      sessionId,
      [
        '/tool generate_image {"prompt":"many foxes","n":9}',
        '/tool generate_image {"prompt":"a big fox","size":"big"}',
        '/tool generate_image {"prompt":"a huge fox","size":"99999x10"}',
      ].join('\n'),
    );
    const results = resultsOf(events);
    expect(results).toHaveLength(3);
    for (const result of results) {
      expect(result).toMatchObject({
        tool: 'generate_image',
        ok: false,
        error: { code: 'invalid_arguments' },
      });
    }
    expect(await photoCount()).toBe(before);
    expect(
      await count(
        `select count(*)::int as n from usage where session_id = $1 and purpose = 'image'`,
        [sessionId],
      ),
    ).toBe(0);
  });
});

describe('generate_image run again', () => {
  it('stores nothing twice and makes no second model call; prices per image', async () => {
    const sessionId = await sessionOf(keys.bob);
    const modelCalls: string[] = [];
    const models = createImageModelRegistry(server.config, {});
    const tool = builtInTools({
      db: server.db,
      images: {
        model: (provider, modelId) => {
          const model = models(provider, modelId);
          return {
            ...model,
            doGenerate: (options) => {
              modelCalls.push(options.prompt ?? '');
              return model.doGenerate(options);
            },
          };
        },
        // As the pricing table's entry {input: 0, output: 0, per_image: 0.04} prices it.
        cost: (model, call) =>
          priceImages(
            { pricing: { [model]: { input: 0, output: 0, cachedInput: 0, perImage: 0.04 } } },
            model,
            call,
          ),
      },
    }).get('generate_image')!;
    const scope = {
      ...callScope(server.config, {
        tenant: 'acme',
        agent: 'default',
        user: 'bob',
        sessionId,
        callId: 'call_again_0',
        turnId: 'turn-again',
        memory: new MemoryEffects([]),
      }),
    };
    const run = () =>
      runTool(
        tool,
        { prompt: 'two owls', n: 2, size: '64x64' },
        {
          signal: new AbortController().signal,
          timeoutMs: 10_000,
          scope,
          options: { model: { provider: 'demo', modelId: 'image' } },
        },
      );
    const first = await run();
    const expected = [0, 1].map((index) => generatedPhotoId(scope, index));
    expect(first).toMatchObject({
      ok: true,
      result: { photos: expected.map((photo_id) => ({ photo_id })), model: 'demo/image' },
    });
    expect(
      await reconcileCall(
        tool,
        {},
        { signal: new AbortController().signal, timeoutMs: 1000, scope },
      ),
    ).toBe('not_done');
    const second = await run();
    expect(second).toMatchObject({ ok: true, result: (first as { result: unknown }).result });
    expect(modelCalls).toEqual(['two owls']);
    expect(
      await count('select count(*)::int as n from photos where photo_id = any($1)', [expected]),
    ).toBe(2);
    const billed = await server.db.query<{ cost_usd: number }>(
      `select cost_usd from usage where session_id = $1 and purpose = 'image'`,
      [sessionId],
    );
    expect(billed.rows.map((row) => row.cost_usd)).toEqual([0.08]);
    const owls = await content(keys.bob, `/api/v1/photos/${expected[0]}/content`);
    expect(pngSize(owls.bytes)).toEqual({ width: 64, height: 64 });
  });

  it('stops at its deadline: the model call is aborted and nothing is stored', async () => {
    const sessionId = await sessionOf(keys.bob);
    const before = await photoCount();
    const models = createImageModelRegistry(server.config, {});
    let aborted: unknown = null;
    const tool = builtInTools({
      db: server.db,
      images: {
        // A provider that never answers: only the call's signal ends it.
        model: (provider, modelId) => ({
          ...models(provider, modelId),
          doGenerate: (options) =>
            new Promise((_resolve, reject) => {
              options.abortSignal?.addEventListener('abort', () => {
                aborted = options.abortSignal?.reason;
                reject(options.abortSignal?.reason as Error);
              });
            }),
        }),
        cost: () => 0,
      },
    }).get('generate_image')!;
    const outcome = await runTool(
      tool,
      { prompt: 'too late' },
      {
        signal: new AbortController().signal,
        timeoutMs: 200,
        scope: callScope(server.config, {
          tenant: 'acme',
          agent: 'default',
          user: 'bob',
          sessionId,
          callId: 'call_late',
          turnId: 'turn-late',
          memory: new MemoryEffects([]),
        }),
        options: { model: { provider: 'demo', modelId: 'image' } },
      },
    );
    expect(outcome).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(aborted).toMatchObject({ code: 'timeout' });
    expect(await photoCount()).toBe(before);
  });
});

describe("a tenant's agent", () => {
  it('may list generate_image, never point it at another provider', async () => {
    const put = (body: unknown) =>
      request(server.url, 'PUT', '/api/v1/agents/artist', body, auth(keys.admin));
    const refused = await put({
      model: 'demo/echo',
      tools: { generate_image: { policy: 'allow', model: 'paid/gpt-image-1' } },
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      error: 'operator_only_key',
      key: 'tools.generate_image.model',
    });
    expect(await count(`select count(*)::int as n from definitions where name = 'artist'`)).toBe(0);
    for (const entry of ['allow', { policy: 'allow', model: 'demo/image' }]) {
      const accepted = await put({ model: 'demo/echo', tools: { generate_image: entry } });
      expect(accepted.status, JSON.stringify(entry)).toBe(200);
    }
  });
});
