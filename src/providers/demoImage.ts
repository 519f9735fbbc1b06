import { createHash } from 'node:crypto';
import type { ImageModelV3, ImageModelV3CallOptions } from '@ai-sdk/provider';
import { encodePng } from './png.js';

/** The size the demo draws when a call names none. */
export const demoImageSize = { width: 256, height: 256 };

/**
 * The demo image model (`demo/image`, CONFIG.md): deterministic and offline, on the AI
 * SDK's ImageModelV3 interface like a real image provider. It draws a PNG from the
 * prompt's words: a background coloured by the whole prompt, one bar per word (up to
 * twelve) whose colour and height come from that word's hash, and a disc placed by the
 * prompt. The same prompt, size and index always give the same bytes; the n images of one
 * call differ (each also hashes its index).
 */
export function createDemoImageModel(modelId: string): ImageModelV3 {
  return {
    specificationVersion: 'v3',
    provider: 'demo',
    modelId,
    maxImagesPerCall: 4,
    async doGenerate(call: ImageModelV3CallOptions) {
      call.abortSignal?.throwIfAborted();
      const size = parseSize(call.size);
      const prompt = call.prompt ?? '';
      const images = Array.from({ length: call.n }, (_unused, index) =>
        drawPrompt(prompt, index, size),
      );
      return {
        images,
        warnings: [],
        response: { timestamp: new Date(0), modelId, headers: undefined },
        usage: {
          inputTokens: words(prompt).length,
          outputTokens: 0,
          totalTokens: words(prompt).length,
        },
      };
    },
  };
}

function parseSize(size: string | undefined): { width: number; height: number } {
  const match = /^(\d+)x(\d+)$/.exec(size ?? '');
  if (!match) return demoImageSize;
  return { width: Number(match[1]), height: Number(match[2]) };
}

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word.length > 0);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Draws one image of `prompt` (its `index`-th of the call) as PNG bytes. */
export function drawPrompt(
  prompt: string,
  index: number,
  size: { width: number; height: number },
): Uint8Array {
  const { width, height } = size;
  const whole = digest(`${index}\u0000${prompt}`);
  const rgb = new Uint8Array(width * height * 3);
  const fill = (x0: number, y0: number, x1: number, y1: number, colour: ArrayLike<number>) => {
    for (let y = Math.max(0, y0); y < Math.min(height, y1); y++) {
      for (let x = Math.max(0, x0); x < Math.min(width, x1); x++) {
        rgb.set([colour[0] ?? 0, colour[1] ?? 0, colour[2] ?? 0], (y * width + x) * 3);
      }
    }
  };
  // A pale background, so the bars stand out.
  fill(0, 0, width, height, [
    160 + ((whole[0] ?? 0) % 96),
    160 + ((whole[1] ?? 0) % 96),
    160 + ((whole[2] ?? 0) % 96),
  ]);
  const bars = words(prompt).slice(0, 12);
  const slot = bars.length > 0 ? Math.floor(width / bars.length) : width;
  bars.forEach((word, position) => {
    const hash = digest(`${index}\u0000${word}`);
    const barHeight = Math.max(4, Math.floor((((hash[3] ?? 0) + 1) / 256) * height * 0.8));
    const x0 = position * slot + Math.floor(slot / 8);
    fill(x0, height - barHeight, x0 + Math.max(1, Math.floor((slot * 3) / 4)), height, [
      hash[0] ?? 0,
      hash[1] ?? 0,
      hash[2] ?? 0,
    ]);
  });
  // A disc whose place, size and colour come from the whole prompt.
  const radius = Math.max(
    2,
    Math.floor((Math.min(width, height) / 10) * (1 + (whole[3] ?? 0) / 256)),
  );
  const cx = Math.floor(((whole[4] ?? 0) / 256) * width);
  const cy = Math.floor(((whole[5] ?? 0) / 256) * (height / 2));
  const disc = [whole[6] ?? 0, whole[7] ?? 0, whole[8] ?? 0];
  for (let y = cy - radius; y <= cy + radius; y++) {
    for (let x = cx - radius; x <= cx + radius; x++) {
      if (x < 0 || y < 0 || x >= width || y >= height) continue;
      if ((x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2) rgb.set(disc, (y * width + x) * 3);
    }
  }
  return encodePng({ width, height, rgb });
}
