import type { Message } from 'chat';
import { bytesMatch, imageTypes, type ImageType } from '../media/imageTypes.js';

/** The most images one platform message brings into its turn (the turns API's bound). */
export const maxPlatformImages = 10;

export interface PlatformImages {
  images: { mediaType: ImageType; data: Uint8Array }[];
  /** What was left out and why, as lines the turn's text ends with: the agent is told. */
  notes: string[];
}

/**
 * The images of a platform message (Slack files, Telegram photos, Discord attachments,
 * what the Chat SDK exposes of Teams and Google Chat), fetched through the SDK (it signs
 * the platform's private URLs). An image is what its bytes are (png, jpeg, webp, gif),
 * whatever the platform declared; anything else, or over `limitBytes` (declared or
 * fetched), or that cannot be fetched, is left out with a note. Other files are not
 * images and are not mentioned.
 */
export async function platformImages(
  message: Pick<Message, 'attachments'>,
  limitBytes: number,
): Promise<PlatformImages> {
  const result: PlatformImages = { images: [], notes: [] };
  const candidates = (message.attachments ?? []).filter(
    (attachment) => attachment.type === 'image' || (attachment.mimeType ?? '').startsWith('image/'),
  );
  for (const [index, attachment] of candidates.entries()) {
    const name = attachment.name ?? `image ${index + 1}`;
    if (result.images.length >= maxPlatformImages) {
      result.notes.push(`[${name} left out: at most ${maxPlatformImages} images a message]`);
      continue;
    }
    if (attachment.size !== undefined && attachment.size > limitBytes) {
      result.notes.push(`[${name} left out: larger than ${limitBytes} bytes]`);
      continue;
    }
    let data: Uint8Array;
    try {
      const fetched =
        attachment.data ?? (attachment.fetchData ? await attachment.fetchData() : undefined);
      if (fetched === undefined) throw new Error('no data');
      data = await bytesOf(fetched);
    } catch {
      result.notes.push(`[${name} left out: it could not be fetched]`);
      continue;
    }
    if (data.byteLength > limitBytes) {
      result.notes.push(`[${name} left out: larger than ${limitBytes} bytes]`);
      continue;
    }
    const mediaType = imageTypes.find((type) => bytesMatch(type, data));
    if (mediaType === undefined) {
      result.notes.push(`[${name} left out: not a png, jpeg, webp or gif image]`);
      continue;
    }
    result.images.push({ mediaType, data });
  }
  return result;
}

async function bytesOf(fetched: Buffer | ArrayBuffer | Blob): Promise<Uint8Array> {
  if (fetched instanceof ArrayBuffer) return new Uint8Array(fetched);
  if (typeof Blob !== 'undefined' && fetched instanceof Blob) {
    return new Uint8Array(await fetched.arrayBuffer());
  }
  return new Uint8Array(fetched as Buffer);
}
