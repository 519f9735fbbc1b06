import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  rawBodies,
  route,
  routeOptions,
  serializerCompiler,
  typed,
  validatorCompiler,
} from '../src/api/contract.js';
import { installErrorHandler } from '../src/api/errors.js';
import { generateDocument } from '../src/api/openapiGenerate.js';

const thing = route({
  method: 'POST',
  url: '/things/:thingId',
  summary: 'Make a thing',
  body: z.object({ size: z.number().int().min(1) }).strict(),
  responses: { '200': z.object({ thing_id: z.string(), size: z.number().int() }) },
  errors: { '400': 'invalid_request' },
});

/** A small app whose one route answers `answer` whatever it was asked. */
async function appAnswering(answer: unknown, check: boolean) {
  const app = Fastify();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler(check));
  installErrorHandler(app);
  typed(app).post(thing.url, routeOptions(thing), async () => answer as never);
  await app.ready();
  return app;
}

describe('route contracts', () => {
  it('refuses a request its schema refuses with invalid_request naming the field', async () => {
    const app = await appAnswering({ thing_id: 'a', size: 1 }, true);
    const answer = await app.inject({ method: 'POST', url: '/things/a', payload: { size: 0 } });
    expect(answer.statusCode).toBe(400);
    expect(answer.json()).toMatchObject({ error: 'invalid_request', field: 'size' });
    expect(answer.json().message).toMatch(/^size: /);
    await app.close();
  });

  it('fails a response that does not match its schema with a 500 when checking, never otherwise', async () => {
    const wrong = { thing_id: 'a', size: 'big' };
    const checking = await appAnswering(wrong, true);
    const checked = await checking.inject({
      method: 'POST',
      url: '/things/a',
      payload: { size: 1 },
    });
    expect(checked.statusCode).toBe(500);
    expect(checked.json()).toMatchObject({ error: 'internal_error' });
    await checking.close();
    const trusting = await appAnswering(wrong, false);
    const sent = await trusting.inject({ method: 'POST', url: '/things/a', payload: { size: 1 } });
    expect(sent.statusCode).toBe(200);
    expect(sent.json()).toEqual(wrong);
    await trusting.close();
  });

  it('documents the route from its contract, in the document’s path spelling', () => {
    const { paths } = generateDocument([thing]);
    const operation = paths['/things/{thing_id}']?.post as any;
    expect(operation.summary).toBe('Make a thing');
    expect(operation.parameters).toEqual([
      { name: 'thing_id', in: 'path', required: true, schema: { type: 'string' } },
    ]);
    expect(operation.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['size'],
      properties: { size: { type: 'integer', minimum: 1 } },
    });
    expect(operation.responses['400'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Error',
    });
  });

  it('takes a raw body as bytes, never parsed, and documents it as binary of its types', async () => {
    const upload = route({
      method: 'POST',
      url: '/blobs',
      summary: 'Store a blob',
      rawBody: { contentTypes: ['image/png', 'application/json'] },
      responses: { '201': z.object({ bytes: z.number().int(), buffer: z.boolean() }) },
    });
    const app = Fastify();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler(true));
    installErrorHandler(app);
    await app.register(async (scope) => {
      rawBodies(scope, 1024);
      typed(scope).post(upload.url, routeOptions(upload), async (request, reply) => {
        const body = request.body as Buffer;
        return reply.status(201).send({ bytes: body.byteLength, buffer: Buffer.isBuffer(body) });
      });
    });
    await app.ready();
    // Not JSON, though it says so: the route gets the bytes as they came.
    const sent = await app.inject({
      method: 'POST',
      url: '/blobs',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(sent.statusCode).toBe(201);
    expect(sent.json()).toEqual({ bytes: 9, buffer: true });
    await app.close();

    const operation = generateDocument([upload]).paths['/blobs']?.post as any;
    expect(operation.requestBody).toEqual({
      required: true,
      content: {
        'image/png': { schema: { type: 'string', format: 'binary' } },
        'application/json': { schema: { type: 'string', format: 'binary' } },
      },
    });
  });
});
