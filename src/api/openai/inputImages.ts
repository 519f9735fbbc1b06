import { ParleyError } from '../../errors.js';
import { bytesMatch, imageTypes, isImageType } from '../../media/imageTypes.js';

/** A Responses `input`: a string, or items whose content parts may be images. */
type Input = string | ({ content?: string | { type: string; image_url?: string }[] } | object)[];

const dataUrl = /^data:([^;,]+);base64,([A-Za-z0-9+/=\s]*)$/;
const maxImages = 16;

/**
 * The images a Responses `input` carries (`input_image` parts), decoded and checked as an
 * upload is (docs/protocols.md): a `data:` URL of an allowed type whose bytes are of it, at
 * most `limitBytes` each, at most 16. Parley fetches no remote image: an `https:` URL or a
 * `file_id` is refused.
 */
export function imagesOf(input: Input, limitBytes: number): { mediaType: string; data: Buffer }[] {
  if (typeof input === 'string') return [];
  const parts = input.flatMap((item) => {
    const content = (item as { content?: unknown }).content;
    return Array.isArray(content) ? (content as { type: string; image_url?: string }[]) : [];
  });
  const images = parts.filter((part) => part.type === 'input_image');
  if (images.length > maxImages) {
    throw new ParleyError('invalid_request', `input: at most ${maxImages} images`, {
      field: 'input',
    });
  }
  return images.map((part) => {
    const match = dataUrl.exec(part.image_url ?? '');
    if (!match) {
      throw new ParleyError(
        'invalid_request',
        'input_image: image_url must be a data: URL (base64); Parley fetches no remote image',
        { field: 'image_url' },
      );
    }
    const mediaType = (match[1] as string).toLowerCase();
    if (!isImageType(mediaType)) {
      throw new ParleyError('unsupported_media_type', `input_image: ${mediaType} is not taken`, {
        allowed: imageTypes,
      });
    }
    const data = Buffer.from((match[2] as string).replace(/\s/g, ''), 'base64');
    if (data.byteLength === 0) {
      throw new ParleyError('invalid_request', 'input_image: the image is empty', {
        field: 'image_url',
      });
    }
    if (data.byteLength > limitBytes) {
      throw new ParleyError('payload_too_large', `input_image: larger than ${limitBytes} bytes`, {
        limit_bytes: limitBytes,
      });
    }
    if (!bytesMatch(mediaType, data)) {
      throw new ParleyError(
        'unsupported_media_type',
        `input_image: the bytes are not a ${mediaType} image`,
      );
    }
    return { mediaType, data };
  });
}
