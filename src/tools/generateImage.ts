import { createHash } from 'node:crypto';
import type { ImageModelV3 } from '@ai-sdk/provider';
import { generateImage } from 'ai';
import { billImageCall } from '../store/billImageCall.js';
import type { Queryable } from '../store/db.js';
import { insertPhoto, photoContentUrl, readPhoto } from '../store/photos.js';
import { ToolError, requireScope, type Tool, type ToolContext } from './types.js';

export const generateImageTool = 'generate_image';
/** The image model when an agent's entry names none (the demo provider draws offline). */
export const defaultImageModel = 'demo/image';
/** At most this many images per call. */
export const maxImagesPerCall = 4;
/** Each side of a requested size lies within these bounds (pixels). */
export const imageSideBounds = { min: 64, max: 2048 };

/** The compiled options of an agent's `generate_image` entry. */
export interface ImageToolOptions {
  model: { provider: string; modelId: string };
}

/** What the tool needs from the process: injected (start-up: the configured providers). */
export interface ImageIo {
  db: Queryable;
  /** The AI SDK image model of a `provider/model` (providers/images.ts). */
  model(provider: string, modelId: string): ImageModelV3;
  /** USD for one call of `model` (the pricing table's; 0 when it has no entry). */
  cost(model: string, call: { images: number; inputTokens: number; outputTokens: number }): number;
}

/** The media types the photo library keeps. */
const libraryTypes = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);

/** `model: provider/model` of an agent's entry (default demo/image); errors name the key. */
export function compileImageOptions(raw: Record<string, unknown>): ImageToolOptions {
  const { model = defaultImageModel, ...rest } = raw;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) {
    throw new Error(
      `${unknown}: unknown key (policy, timeout_ms, idempotent, human_only, approval_timeout_ms, on_timeout, escalate, remind_before_ms, on_unknown, model)`,
    );
  }
  const slash = typeof model === 'string' ? model.indexOf('/') : -1;
  if (typeof model !== 'string' || slash <= 0 || slash === model.length - 1) {
    throw new Error('model: a "provider/model" name, e.g. "demo/image"');
  }
  return { model: { provider: model.slice(0, slash), modelId: model.slice(slash + 1) } };
}

/** A size argument `WIDTHxHEIGHT`, each side within the bounds; a tool error otherwise. */
function checkedSize(size: string | undefined): `${number}x${number}` | undefined {
  if (size === undefined) return undefined;
  const match = /^(\d{1,5})x(\d{1,5})$/.exec(size);
  const sides = match ? [Number(match[1]), Number(match[2])] : [];
  if (
    sides.length !== 2 ||
    sides.some((side) => side < imageSideBounds.min || side > imageSideBounds.max)
  ) {
    throw new ToolError(
      'invalid_arguments',
      `size: WIDTHxHEIGHT, each side ${imageSideBounds.min} to ${imageSideBounds.max} (e.g. "512x512"); nothing was made`,
    );
  }
  return size as `${number}x${number}`;
}

/**
 * The id of the `index`-th image of a call: derived from the session, the turn and the
 * tool call, so a call run again (after a crash) names the same photos, and storing them
 * again does nothing (insertPhoto is idempotent by id). ULID-shaped, like `newPhotoId`.
 */
export function generatedPhotoId(
  scope: { tenant: string; sessionId: string; turnId?: string; callId: string },
  index: number,
): string {
  const hash = createHash('sha256')
    .update([scope.tenant, scope.sessionId, scope.turnId ?? '', scope.callId, index].join('\u0000'))
    .digest();
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  const chars = [...hash.subarray(0, 26)].map((byte, position) =>
    position === 0 ? alphabet[byte % 8] : alphabet[byte % 32],
  );
  return `ph_${chars.join('')}`;
}

/**
 * `generate_image {prompt, size?, n?}` (docs/tools.md): makes `n` images (1 to 4) with the
 * agent's image model (its entry's `model`, default `demo/image`), stores each in the
 * turn's user's photo library (origin `generated`; its source names the session, turn,
 * tool call, model and prompt) and returns their ids and content URLs. The model call is
 * billed at once (a usage row with purpose `image`; cost: the pricing table's `per_image`
 * per image plus any tokens the provider reports) and bounded by the call's signal.
 *
 * Safe to run again: the photos' ids come from the turn and the call, so a call that
 * already stored them returns them without a second model call, and `reconcile` always
 * lets a call interrupted by a crash run again.
 */
export function createGenerateImage(io: ImageIo | undefined): Tool {
  return {
    name: generateImageTool,
    description:
      "Generates images from a text prompt; they are saved in the user's photo library and " +
      'shown with this reply. Returns each photo_id and its content_url.',
    inputSchema: {
      type: 'object',
      properties: {
        prompt: { type: 'string', minLength: 1, maxLength: 4000 },
        size: {
          type: 'string',
          description: `WIDTHxHEIGHT in pixels, e.g. "512x512" (default: the model's)`,
        },
        n: { type: 'integer', minimum: 1, maximum: maxImagesPerCall },
      },
      required: ['prompt'],
      additionalProperties: false,
    },
    defaultTimeoutMs: 120_000,
    compileOptions: compileImageOptions,
    async execute(args, context) {
      const scope = requireScope(generateImageTool, context);
      const call = args as { prompt: string; size?: string; n?: number };
      const size = checkedSize(call.size);
      const n = call.n ?? 1;
      if (!io) throw new ToolError('unavailable', 'image generation is not available here');
      const { model } = (context.options as Partial<ImageToolOptions>).model
        ? (context.options as ImageToolOptions)
        : compileImageOptions({});
      const modelName = `${model.provider}/${model.modelId}`;
      const photoIds = Array.from({ length: n }, (_unused, index) =>
        generatedPhotoId(scope, index),
      );
      const result = (photos: string[]) => ({
        photos: photos.map((photoId) => ({
          photo_id: photoId,
          content_url: photoContentUrl(photoId),
        })),
        model: modelName,
      });

      // Run again after a crash: what the first run stored is the answer.
      const stored = await Promise.all(
        photoIds.map((photoId) => readPhoto(io.db, scope.tenant, scope.user, photoId)),
      );
      if (stored.every((photo) => photo !== null)) return result(photoIds);

      const images = await generate(io, model, call.prompt, n, size, context, {
        tenant: scope.tenant,
        sessionId: scope.sessionId,
        turnId: scope.turnId ?? scope.callId,
        model: modelName,
      });
      const made = images.slice(0, n);
      for (const [index, image] of made.entries()) {
        if (!libraryTypes.has(image.mediaType)) {
          throw new ToolError(
            'tool_failed',
            `the image model returned ${image.mediaType}, which the photo library does not keep`,
          );
        }
        context.signal.throwIfAborted();
        await insertPhoto(io.db, {
          photoId: photoIds[index] as string,
          tenant: scope.tenant,
          owner: scope.user,
          origin: 'generated',
          title: call.prompt.slice(0, 200),
          source: {
            session_id: scope.sessionId,
            turn_id: scope.turnId ?? null,
            tool_call_id: scope.callId,
            model: modelName,
            prompt: call.prompt,
          },
          mediaType: image.mediaType,
          bytes: image.uint8Array,
        });
      }
      return result(photoIds.slice(0, made.length));
    },
    // Running it again is safe (above): never ask a person whether it took effect.
    async reconcile() {
      return 'not_done';
    },
  };
}

/** One billed model call; a failure is billed too (the provider may have charged). */
async function generate(
  io: ImageIo,
  model: ImageToolOptions['model'],
  prompt: string,
  n: number,
  size: `${number}x${number}` | undefined,
  context: ToolContext,
  bill: { tenant: string; sessionId: string; turnId: string; model: string },
) {
  const started = Date.now();
  let imageModel: ImageModelV3;
  try {
    imageModel = io.model(model.provider, model.modelId);
  } catch {
    throw new ToolError('unavailable', `the image model ${bill.model} is not available`);
  }
  try {
    const generated = await generateImage({
      model: imageModel,
      prompt,
      n,
      ...(size ? { size } : {}),
      abortSignal: context.signal,
      maxRetries: 1,
    });
    const inputTokens = generated.usage.inputTokens ?? 0;
    const outputTokens = generated.usage.outputTokens ?? 0;
    await billImageCall(io.db, {
      ...bill,
      outcome: 'ok',
      inputTokens,
      outputTokens,
      costUsd: io.cost(bill.model, { images: generated.images.length, inputTokens, outputTokens }),
      latencyMs: Date.now() - started,
    });
    return generated.images;
  } catch (error) {
    if (error instanceof ToolError) throw error;
    if (context.signal.aborted) throw context.signal.reason as Error;
    await billImageCall(io.db, {
      ...bill,
      outcome: 'failed',
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
      latencyMs: Date.now() - started,
    });
    throw new ToolError('tool_failed', `the image model ${bill.model} failed; nothing was made`);
  }
}
