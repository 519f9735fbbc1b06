import { bytesMatch, isImageType } from './imageTypes.js';

/**
 * A picture given as a URL (a user's avatar, an agent's icon): an https URL, or a small
 * image inline as a `data:` URL whose bytes are of its type (magic bytes, as uploads). The
 * web app shows either without loading anything else from elsewhere.
 */
export const maxPictureUrlChars = 65_536;

export const pictureUrlRule =
  'must be an https URL (at most 2,048 characters) or a data: URL of a png, jpeg, webp or gif image (at most 48 KiB)';

export function isPictureUrl(url: string): boolean {
  return url.length <= maxPictureUrlChars && (isHttpsPicture(url) || isImageDataUrl(url));
}

function isHttpsPicture(url: string): boolean {
  return url.length <= 2048 && /^https:\/\/[^\s]+$/.test(url) && URL.canParse(url);
}

function isImageDataUrl(url: string): boolean {
  const found = /^data:(image\/[a-z]+);base64,([A-Za-z0-9+/]+={0,2})$/.exec(url);
  if (!found) return false;
  const [, mediaType, data] = found as unknown as [string, string, string];
  return isImageType(mediaType) && bytesMatch(mediaType, Buffer.from(data, 'base64'));
}
