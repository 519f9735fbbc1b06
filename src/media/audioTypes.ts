/**
 * The audio a transcription takes (what browsers record and providers accept), each with
 * its magic bytes: the declared content type must match what the bytes are.
 */
export const audioTypes = [
  'audio/webm',
  'audio/ogg',
  'audio/wav',
  'audio/x-wav',
  'audio/mpeg',
  'audio/mp4',
  'audio/x-m4a',
  'audio/flac',
] as const;
export type AudioType = (typeof audioTypes)[number];

export function isAudioType(mediaType: string): mediaType is AudioType {
  return (audioTypes as readonly string[]).includes(mediaType);
}

const ascii = (data: Uint8Array, start: number, text: string) =>
  Buffer.from(data.subarray(start, start + text.length)).toString('latin1') === text;

export function audioBytesMatch(mediaType: AudioType, data: Uint8Array): boolean {
  switch (mediaType) {
    case 'audio/webm':
      return data[0] === 0x1a && data[1] === 0x45 && data[2] === 0xdf && data[3] === 0xa3;
    case 'audio/ogg':
      return ascii(data, 0, 'OggS');
    case 'audio/wav':
    case 'audio/x-wav':
      return ascii(data, 0, 'RIFF') && ascii(data, 8, 'WAVE');
    case 'audio/mpeg':
      // An ID3 tag, or an MPEG frame's sync bits.
      return ascii(data, 0, 'ID3') || (data[0] === 0xff && ((data[1] ?? 0) & 0xe0) === 0xe0);
    case 'audio/mp4':
    case 'audio/x-m4a':
      return ascii(data, 4, 'ftyp');
    case 'audio/flac':
      return ascii(data, 0, 'fLaC');
  }
}
