import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inflateSync } from 'node:zlib';
import { generateImage } from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { compileConfig, ConfigError } from '../src/config/load.js';
import { createDemoImageModel } from '../src/providers/demoImage.js';
import { createImageModelRegistry, priceImages } from '../src/providers/images.js';
import { crc32, encodePng, pngSignature } from '../src/providers/png.js';
import { builtInTools, runTool } from '../src/tools/registry.js';

// Image generation without a database: the PNG encoder, the demo image model, the image
// providers' wire formats against a local server (OpenAI's images API with b64_json,
// Imagen's predict, fal's run-then-download), and the configuration of the tool's model.

/** The chunks of a PNG: type, data, and whether its CRC-32 is right. */
function chunksOf(png: Uint8Array): { type: string; data: Buffer; crcOk: boolean }[] {
  const bytes = Buffer.from(png);
  expect(bytes.subarray(0, 8)).toEqual(Buffer.from(pngSignature));
  const chunks: { type: string; data: Buffer; crcOk: boolean }[] = [];
  let at = 8;
  while (at < bytes.length) {
    const length = bytes.readUInt32BE(at);
    const typeAndData = bytes.subarray(at + 4, at + 8 + length);
    const crc = bytes.readUInt32BE(at + 8 + length);
    chunks.push({
      type: typeAndData.subarray(0, 4).toString('latin1'),
      data: Buffer.from(typeAndData.subarray(4)),
      crcOk: crc32(typeAndData) === crc,
    });
    at += 12 + length;
  }
  return chunks;
}

/** Decodes the pixels of a PNG this encoder made (filter type 0 on every row). */
function pixelsOf(png: Uint8Array): { width: number; height: number; rgb: Buffer } {
  const chunks = chunksOf(png);
  const header = chunks[0]!.data;
  const width = header.readUInt32BE(0);
  const height = header.readUInt32BE(4);
  const raw = inflateSync(
    Buffer.concat(chunks.filter((c) => c.type === 'IDAT').map((c) => c.data)),
  );
  const rgb = Buffer.alloc(width * height * 3);
  for (let row = 0; row < height; row++) {
    expect(raw[row * (width * 3 + 1)]).toBe(0);
    raw.copy(rgb, row * width * 3, row * (width * 3 + 1) + 1, (row + 1) * (width * 3 + 1));
  }
  return { width, height, rgb };
}

describe('the PNG encoder', () => {
  it('writes the signature, IHDR, IDAT and IEND with valid CRCs, and the pixels given', () => {
    const rgb = Uint8Array.from({ length: 3 * 5 * 3 }, (_unused, index) => (index * 37) % 256);
    const png = encodePng({ width: 3, height: 5, rgb });
    const chunks = chunksOf(png);
    expect(chunks.map((chunk) => chunk.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect(chunks.every((chunk) => chunk.crcOk)).toBe(true);
    const header = chunks[0]!.data;
    expect(header.length).toBe(13);
    expect([header.readUInt32BE(0), header.readUInt32BE(4), header[8], header[9]]).toEqual([
      3, 5, 8, 2,
    ]);
    expect(chunks[2]!.data.length).toBe(0);
    const decoded = pixelsOf(png);
    expect(Buffer.compare(decoded.rgb, Buffer.from(rgb))).toBe(0);
  });

  it('computes the standard CRC-32 (the check value of "123456789")', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
  });

  it('refuses pixels of the wrong length', () => {
    expect(() => encodePng({ width: 2, height: 2, rgb: new Uint8Array(5) })).toThrow(RangeError);
  });
});

describe('the demo image model', () => {
  const model = createDemoImageModel('image');

  it('draws the same PNG for the same prompt, another for another prompt', async () => {
    const first = await generateImage({ model, prompt: 'a red fox' });
    const again = await generateImage({ model, prompt: 'a red fox' });
    const other = await generateImage({ model, prompt: 'a blue whale' });
    expect(first.image.mediaType).toBe('image/png');
    expect(Buffer.from(first.image.uint8Array).equals(Buffer.from(again.image.uint8Array))).toBe(
      true,
    );
    expect(Buffer.from(first.image.uint8Array).equals(Buffer.from(other.image.uint8Array))).toBe(
      false,
    );
    const { width, height, rgb } = pixelsOf(first.image.uint8Array);
    expect([width, height]).toEqual([256, 256]);
    // Shapes were drawn: the picture is not one flat colour.
    const colours = new Set<string>();
    for (let pixel = 0; pixel < width * height; pixel += 97) {
      colours.add(rgb.subarray(pixel * 3, pixel * 3 + 3).toString('hex'));
    }
    expect(colours.size).toBeGreaterThan(2);
  });

  it('draws n different images at the requested size', async () => {
    const made = await generateImage({ model, prompt: 'three cats', n: 3, size: '128x64' });
    expect(made.images).toHaveLength(3);
    const distinct = new Set(
      made.images.map((image) => Buffer.from(image.uint8Array).toString('hex')),
    );
    expect(distinct.size).toBe(3);
    expect(pixelsOf(made.images[0]!.uint8Array)).toMatchObject({ width: 128, height: 64 });
  });

  it('stops at an aborted signal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('deadline'));
    await expect(
      generateImage({ model, prompt: 'late', abortSignal: controller.signal, maxRetries: 0 }),
    ).rejects.toThrow(/deadline/);
  });
});

interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A local server playing the image APIs; answers are set per `METHOD path`. */
let server: Server;
let baseUrl = '';
const recorded: Recorded[] = [];
const answers = new Map<string, { type: string; body: Buffer | string; status?: number }>();

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = new URL(request.url ?? '/', 'http://fixture').pathname;
      recorded.push({
        method: request.method ?? 'GET',
        path,
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const answer = answers.get(`${request.method} ${path}`);
      if (!answer) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: `nothing at ${path}` } }));
        return;
      }
      response.writeHead(answer.status ?? 200, { 'content-type': answer.type });
      response.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  recorded.length = 0;
  answers.clear();
});

const fox = encodePng({
  width: 2,
  height: 2,
  rgb: Uint8Array.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9]),
});
const whale = encodePng({ width: 1, height: 1, rgb: Uint8Array.from([0, 0, 200]) });

function configWith(provider: Record<string, unknown>, tool: unknown = 'allow') {
  return compileConfig(
    {
      providers: {
        demo: { kind: 'demo' },
        images: { ...provider, base_url: `${baseUrlFor(provider)}` },
      },
      agents: { default: { model: 'demo/echo', tools: { generate_image: tool } } },
    },
    { IMAGE_KEY: 'sk-image-test' },
  );
}
function baseUrlFor(provider: Record<string, unknown>): string {
  return provider.kind === 'openai'
    ? `${baseUrl}/v1`
    : provider.kind === 'google'
      ? `${baseUrl}/v1beta`
      : baseUrl;
}

describe('image providers over HTTP', () => {
  it('openai: POST /v1/images/generations, b64_json images', async () => {
    answers.set('POST /v1/images/generations', {
      type: 'application/json',
      body: JSON.stringify({
        created: 1,
        data: [
          { b64_json: Buffer.from(fox).toString('base64') },
          { b64_json: Buffer.from(whale).toString('base64') },
        ],
        usage: { input_tokens: 12, output_tokens: 4000, total_tokens: 4012 },
      }),
    });
    const config = configWith({ kind: 'openai', api_key_env: 'IMAGE_KEY' });
    const model = createImageModelRegistry(config, { IMAGE_KEY: 'sk-image-test' })(
      'images',
      'gpt-image-1',
    );
    const made = await generateImage({ model, prompt: 'a red fox', n: 2, size: '1024x1024' });
    expect(made.images.map((image) => Buffer.from(image.uint8Array))).toEqual([
      Buffer.from(fox),
      Buffer.from(whale),
    ]);
    expect(made.images[0]!.mediaType).toBe('image/png');
    expect(made.usage).toMatchObject({ inputTokens: 12, outputTokens: 4000 });
    expect(recorded).toHaveLength(1);
    expect(recorded[0]!.headers.authorization).toBe('Bearer sk-image-test');
    expect(JSON.parse(recorded[0]!.body)).toMatchObject({
      model: 'gpt-image-1',
      prompt: 'a red fox',
      n: 2,
      size: '1024x1024',
    });
  });

  it('google: POST /v1beta/models/{model}:predict, base64 predictions', async () => {
    answers.set('POST /v1beta/models/imagen-4.0-generate-001:predict', {
      type: 'application/json',
      body: JSON.stringify({
        predictions: [
          { bytesBase64Encoded: Buffer.from(whale).toString('base64'), mimeType: 'image/png' },
        ],
      }),
    });
    const config = configWith({ kind: 'google', api_key_env: 'IMAGE_KEY' });
    const model = createImageModelRegistry(config, { IMAGE_KEY: 'sk-image-test' })(
      'images',
      'imagen-4.0-generate-001',
    );
    const made = await generateImage({ model, prompt: 'a blue whale' });
    expect(Buffer.from(made.image.uint8Array)).toEqual(Buffer.from(whale));
    expect(recorded[0]!.headers['x-goog-api-key']).toBe('sk-image-test');
    expect(JSON.parse(recorded[0]!.body)).toMatchObject({
      instances: [{ prompt: 'a blue whale' }],
      parameters: { sampleCount: 1 },
    });
  });

  it('fal: POST {base}/{model} with image_size and num_images, then GET each image url', async () => {
    answers.set('POST /fal-ai/flux/schnell', {
      type: 'application/json',
      body: JSON.stringify({
        images: [
          { url: `${baseUrl}/files/fox.png`, width: 2, height: 2, content_type: 'image/png' },
        ],
        seed: 7,
        prompt: 'a red fox',
      }),
    });
    answers.set('GET /files/fox.png', { type: 'image/png', body: Buffer.from(fox) });
    const config = configWith({ kind: 'fal', api_key_env: 'IMAGE_KEY' });
    const model = createImageModelRegistry(config, { IMAGE_KEY: 'fal-key' })(
      'images',
      'fal-ai/flux/schnell',
    );
    const made = await generateImage({ model, prompt: 'a red fox', size: '512x256' });
    expect(Buffer.from(made.image.uint8Array)).toEqual(Buffer.from(fox));
    expect(recorded.map((request) => `${request.method} ${request.path}`)).toEqual([
      'POST /fal-ai/flux/schnell',
      'GET /files/fox.png',
    ]);
    expect(recorded[0]!.headers.authorization).toBe('Key fal-key');
    expect(JSON.parse(recorded[0]!.body)).toMatchObject({
      prompt: 'a red fox',
      image_size: { width: 512, height: 256 },
      num_images: 1,
    });
  });

  it('a provider error comes back as an error, not as images', async () => {
    answers.set('POST /v1/images/generations', {
      type: 'application/json',
      status: 400,
      body: JSON.stringify({ error: { message: 'bad prompt', type: 'invalid_request_error' } }),
    });
    const config = configWith({ kind: 'openai', api_key_env: 'IMAGE_KEY' });
    const model = createImageModelRegistry(config, { IMAGE_KEY: 'sk-image-test' })(
      'images',
      'gpt-image-1',
    );
    await expect(generateImage({ model, prompt: 'x', maxRetries: 0 })).rejects.toThrow();
  });
});

describe('configuring generate_image', () => {
  it('defaults to demo/image, and takes a model of an image provider', () => {
    const config = compileConfig({
      agents: { default: { model: 'demo/echo', tools: { generate_image: 'allow' } } },
    });
    expect(config.agents.default!.tools.generate_image!.options).toEqual({
      model: { provider: 'demo', modelId: 'image' },
    });
    const chosen = configWith(
      { kind: 'fal', api_key_env: 'IMAGE_KEY' },
      {
        policy: 'allow',
        model: 'images/fal-ai/flux/schnell',
      },
    );
    expect(chosen.agents.default!.tools.generate_image!.options).toEqual({
      model: { provider: 'images', modelId: 'fal-ai/flux/schnell' },
    });
  });

  it('refuses a model of a missing provider, or of one that makes no images, naming the key', () => {
    const file = (model: string) => ({
      providers: {
        demo: { kind: 'demo' },
        claude: { kind: 'anthropic', api_key_env: 'IMAGE_KEY' },
      },
      agents: { default: { model: 'demo/echo', tools: { generate_image: { model } } } },
    });
    expect(() => compileConfig(file('nowhere/image'), { IMAGE_KEY: 'k' })).toThrow(
      /agents\.default\.tools\.generate_image\.model: no provider named "nowhere"/,
    );
    expect(() => compileConfig(file('claude/sonnet'), { IMAGE_KEY: 'k' })).toThrow(
      /agents\.default\.tools\.generate_image\.model: .*makes no images/,
    );
    expect(() => compileConfig(file('image'), { IMAGE_KEY: 'k' })).toThrow(
      /agents\.default\.tools\.generate_image\.model/,
    );
  });

  it("checks the image provider's key at start-up; fal needs one and answers no replies", () => {
    expect(() =>
      compileConfig(
        {
          providers: { demo: { kind: 'demo' }, art: { kind: 'fal', api_key_env: 'FAL_KEY' } },
          agents: {
            default: { model: 'demo/echo', tools: { generate_image: { model: 'art/flux' } } },
          },
        },
        {},
      ),
    ).toThrow(/agents\.default\.tools\.generate_image\.model: .*FAL_KEY/);
    expect(() => compileConfig({ providers: { art: { kind: 'fal' } } }, {})).toThrow(
      /providers\.art\.api_key_env: required for kind fal/,
    );
    expect(() =>
      compileConfig(
        {
          providers: { art: { kind: 'fal', api_key_env: 'FAL_KEY' } },
          agents: { default: { model: 'art/flux' } },
        },
        { FAL_KEY: 'k' },
      ),
    ).toThrow(ConfigError);
  });
});

describe('pricing image calls', () => {
  it('charges per_image for each image plus the tokens reported; nothing without an entry', () => {
    const config = compileConfig({
      pricing: { 'art/gpt-image-1': { input: 5, output: 40, per_image: 0.04 } },
    });
    expect(config.pricing['art/gpt-image-1']).toMatchObject({ perImage: 0.04 });
    const cost = priceImages(config, 'art/gpt-image-1', {
      images: 2,
      inputTokens: 1_000,
      outputTokens: 10_000,
    });
    expect(cost).toBeCloseTo(0.08 + (1_000 * 5 + 10_000 * 40) / 1e6, 10);
    expect(priceImages(config, 'demo/image', { images: 3, inputTokens: 5, outputTokens: 0 })).toBe(
      0,
    );
  });
});

describe('the generate_image tool outside a turn', () => {
  const tool = builtInTools().get('generate_image')!;
  const call = (args: unknown) =>
    runTool(tool, args, { signal: new AbortController().signal, timeoutMs: 5000 });

  it('refuses n over 4 and a size that is not WIDTHxHEIGHT', async () => {
    for (const args of [
      { prompt: 'x', n: 9 },
      { prompt: 'x', n: 0 },
      { prompt: '' },
      { prompt: 'x', extra: 1 },
    ]) {
      const outcome = await call(args);
      expect(outcome).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
    }
  });

  it('needs a turn', async () => {
    expect(await call({ prompt: 'a red fox' })).toMatchObject({
      ok: false,
      error: { code: 'tool_failed' },
    });
  });
});
