import type { Config } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import { bytesMatch, imageTypes, isImageType } from '../../media/imageTypes.js';
import { checkUrl, exchange } from '../../tools/httpFetch/index.js';
import { hostAllowed } from '../../tools/httpFetch/hosts.js';
import { systemResolve, type Resolve } from '../../tools/httpFetch/lookup.js';
import { ToolError } from '../../tools/types.js';

type RemoteImages = Config['limits']['remoteImages'];

/** A content part that may be an image: by URL, or by the id of a file of the caller's. */
interface Part {
  type: string;
  image_url?: string | null;
  file_id?: string | null;
}

/** A Responses `input`: a string, or items whose content parts may be images. */
type Input = string | ({ content?: string | Part[] } | object)[];

/** A file of the caller's by its id (a photo of their library); null when they have none. */
export type StoredImage = (
  fileId: string,
) => Promise<{ mediaType: string; bytes: Uint8Array } | null>;

const dataUrl = /^data:([^;,]+);base64,([A-Za-z0-9+/=\s]*)$/;
const maxImages = 16;

/**
 * The images a Responses `input` carries (`input_image` parts, and `input_file` ones, which
 * name a file by its id), decoded and checked as an upload is (docs/protocols.md): a
 * `data:` URL of an allowed type whose bytes are of it, an http(s) URL on
 * `limits.remote_images.allow_hosts`, fetched (see `fetchImage`), or a `file_id` naming a
 * file of the caller's (`stored`: a photo of their library; any other is `unknown_file`);
 * at most `limitBytes` each, at most 16.
 */
export async function imagesOf(
  input: Input,
  limitBytes: number,
  remote: RemoteImages,
  stored: StoredImage,
  resolve: Resolve = systemResolve,
): Promise<{ mediaType: string; data: Buffer }[]> {
  if (typeof input === 'string') return [];
  const parts = input.flatMap((item) => {
    const content = (item as { content?: unknown }).content;
    return Array.isArray(content) ? (content as Part[]) : [];
  });
  const images = parts.filter((part) => part.type === 'input_image' || part.type === 'input_file');
  if (images.length > maxImages) {
    throw new ParleyError('invalid_request', `input: at most ${maxImages} images`, {
      field: 'input',
    });
  }
  const found: { mediaType: string; data: Buffer }[] = [];
  for (const part of images) {
    if (typeof part.file_id === 'string') {
      found.push(await storedImage(part.file_id, limitBytes, stored));
      continue;
    }
    const url = part.image_url ?? '';
    const match = dataUrl.exec(url);
    found.push(
      match ? decoded(match, limitBytes) : await fetchImage(url, limitBytes, remote, resolve),
    );
  }
  return found;
}

/** A file of the caller's, as the image it is (the library holds images only). */
async function storedImage(
  fileId: string,
  limitBytes: number,
  stored: StoredImage,
): Promise<{ mediaType: string; data: Buffer }> {
  const found = await stored(fileId);
  if (!found) {
    throw new ParleyError('unknown_file', 'file_id: no such file', { field: 'file_id' });
  }
  const data = Buffer.from(found.bytes);
  checkSize(data, limitBytes);
  return { mediaType: found.mediaType, data };
}

function decoded(match: RegExpExecArray, limitBytes: number): { mediaType: string; data: Buffer } {
  const mediaType = (match[1] as string).toLowerCase();
  if (!isImageType(mediaType)) {
    throw new ParleyError('unsupported_media_type', `input_image: ${mediaType} is not taken`, {
      allowed: imageTypes,
    });
  }
  const data = Buffer.from((match[2] as string).replace(/\s/g, ''), 'base64');
  checkSize(data, limitBytes);
  if (!bytesMatch(mediaType, data)) {
    throw new ParleyError(
      'unsupported_media_type',
      `input_image: the bytes are not a ${mediaType} image`,
    );
  }
  return { mediaType, data };
}

function checkSize(data: Uint8Array, limitBytes: number): void {
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
}

/**
 * An image by URL, as `http_fetch` fetches (its host rules and its lookup, which refuses
 * internal addresses unless `allow_private`): one GET, no redirect followed, a 200 whose
 * body is at most `limitBytes`, within `timeout_ms` (an AbortSignal that ends the
 * exchange). The image is what its bytes are, whatever the answer's content type said.
 */
async function fetchImage(
  text: string,
  limitBytes: number,
  remote: RemoteImages,
  resolve: Resolve,
): Promise<{ mediaType: string; data: Buffer }> {
  let url: URL | null = null;
  try {
    url = new URL(text);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new ParleyError(
      'invalid_request',
      'input_image: image_url must be a data: URL (base64) or an http(s) URL',
      { field: 'image_url' },
    );
  }
  if (remote.allowHosts.length === 0) {
    throw new ParleyError(
      'invalid_request',
      'input_image: this server fetches no remote image (limits.remote_images); send a data: URL',
      { field: 'image_url' },
    );
  }
  if (!hostAllowed(remote.allowHosts, url)) {
    throw new ParleyError(
      'invalid_request',
      `input_image: ${url.host} is not on limits.remote_images.allow_hosts; nothing was fetched`,
      { field: 'image_url' },
    );
  }
  try {
    checkUrl(url, remote, false);
    const answer = await exchange(
      url,
      'GET',
      undefined,
      { allowPrivate: remote.allowPrivate, maxBytes: limitBytes + 1 },
      resolve,
      { signal: AbortSignal.timeout(remote.timeoutMs), timeoutMs: remote.timeoutMs },
    );
    if (answer.status !== 200) {
      throw new ToolError('unavailable', `${url.host} answered HTTP ${answer.status}`);
    }
    const data = Buffer.from(answer.body);
    checkSize(data, limitBytes);
    const mediaType = imageTypes.find((type) => bytesMatch(type, data));
    if (!mediaType) {
      throw new ParleyError('unsupported_media_type', 'input_image: the URL gave no image', {
        allowed: imageTypes,
      });
    }
    return { mediaType, data };
  } catch (error) {
    if (error instanceof ToolError) {
      throw new ParleyError('invalid_request', `input_image: ${error.message}`, {
        field: 'image_url',
      });
    }
    throw error;
  }
}
