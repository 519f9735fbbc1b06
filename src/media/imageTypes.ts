/**
 * The image types an attachment may have, each with its magic bytes: the declared
 * content type must match what the bytes are (a text file renamed `.png` is refused).
 */
export const imageTypes = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
export type ImageType = (typeof imageTypes)[number];

export function isImageType(mediaType: string): mediaType is ImageType {
  return (imageTypes as readonly string[]).includes(mediaType);
}

const ascii = (data: Uint8Array, start: number, text: string) =>
  Buffer.from(data.subarray(start, start + text.length)).toString('latin1') === text;

export function bytesMatch(mediaType: ImageType, data: Uint8Array): boolean {
  switch (mediaType) {
    case 'image/png':
      return ascii(data, 0, '\x89PNG\r\n\x1a\n');
    case 'image/jpeg':
      return data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff;
    case 'image/gif':
      return ascii(data, 0, 'GIF87a') || ascii(data, 0, 'GIF89a');
    case 'image/webp':
      return ascii(data, 0, 'RIFF') && ascii(data, 8, 'WEBP');
  }
}
