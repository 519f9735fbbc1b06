import type { Attachment } from 'chat';
import { describe, expect, it } from 'vitest';
import { maxPlatformImages, platformImages } from '../src/adapters/inboundImages.js';

// What of a platform message's attachments becomes images of its turn: the rules every
// platform shares (test/adapters-telegram.test.ts takes a photo through the whole path).

const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const gif = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1');

describe('platform images', () => {
  it('takes images by their bytes, from data, a Buffer, an ArrayBuffer or a Blob', async () => {
    const attachments: Attachment[] = [
      { type: 'image', data: png },
      // Declared a jpeg, is a gif: what the bytes are counts.
      { type: 'image', mimeType: 'image/jpeg', fetchData: async () => gif },
      {
        type: 'file',
        mimeType: 'image/png',
        fetchData: async () => png.buffer.slice(png.byteOffset, png.byteOffset + png.byteLength),
      },
      { type: 'image', data: new Blob([png]) },
      // Not images: not fetched, not mentioned.
      {
        type: 'file',
        mimeType: 'application/pdf',
        fetchData: async () => {
          throw new Error('fetched a pdf');
        },
      },
      { type: 'audio', data: png },
    ];
    const found = await platformImages({ attachments }, 1024);
    expect(found.notes).toEqual([]);
    expect(found.images.map((image) => image.mediaType)).toEqual([
      'image/png',
      'image/gif',
      'image/png',
      'image/png',
    ]);
    for (const image of found.images) expect(image.data).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(found.images[0]!.data)).toEqual(png);
  });

  it('leaves out, with a note, what is too large, not an image, or cannot be fetched', async () => {
    let fetched = 0;
    const attachments: Attachment[] = [
      {
        type: 'image',
        name: 'big.png',
        size: 5000,
        fetchData: async () => {
          fetched++;
          return png;
        },
      },
      {
        type: 'image',
        name: 'grown.png',
        fetchData: async () => Buffer.concat([png, Buffer.alloc(2000)]),
      },
      { type: 'image', name: 'text.png', data: Buffer.from('plain text') },
      {
        type: 'image',
        name: 'gone.png',
        fetchData: async () => {
          throw new Error('404');
        },
      },
      { type: 'image', name: 'nothing.png' },
    ];
    const found = await platformImages({ attachments }, 1024);
    expect(found.images).toEqual([]);
    expect(fetched).toBe(0);
    expect(found.notes).toEqual([
      '[big.png left out: larger than 1024 bytes]',
      '[grown.png left out: larger than 1024 bytes]',
      '[text.png left out: not a png, jpeg, webp or gif image]',
      '[gone.png left out: it could not be fetched]',
      '[nothing.png left out: it could not be fetched]',
    ]);
  });

  it(`takes at most ${maxPlatformImages} images of a message`, async () => {
    const attachments: Attachment[] = Array.from({ length: maxPlatformImages + 2 }, () => ({
      type: 'image' as const,
      data: png,
    }));
    const found = await platformImages({ attachments }, 1024);
    expect(found.images).toHaveLength(maxPlatformImages);
    expect(found.notes).toHaveLength(2);
    expect(found.notes[0]).toContain(`at most ${maxPlatformImages} images`);
  });
});
