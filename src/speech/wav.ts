/**
 * RIFF/WAVE lengths. A WAV written to a pipe (espeak-ng `--stdout`) cannot seek back to
 * its header, so its RIFF and `data` sizes are placeholders; `settleWavLengths` writes the
 * real ones once every byte is in.
 */

/** Where the `data` chunk's size field is, walking the chunks after `WAVE`; null: none. */
function dataChunkAt(bytes: Uint8Array): number | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 12;
  while (at + 8 <= bytes.byteLength) {
    const id = String.fromCharCode(...bytes.subarray(at, at + 4));
    if (id === 'data') return at;
    const size = view.getUint32(at + 4, true);
    at += 8 + size + (size % 2);
  }
  return null;
}

export function isWav(bytes: Uint8Array): boolean {
  return (
    bytes.byteLength >= 12 &&
    String.fromCharCode(...bytes.subarray(0, 4)) === 'RIFF' &&
    String.fromCharCode(...bytes.subarray(8, 12)) === 'WAVE'
  );
}

/** The same bytes with the RIFF size and the `data` chunk's size those of the bytes held. */
export function settleWavLengths(bytes: Uint8Array): Uint8Array {
  if (!isWav(bytes)) return bytes;
  const data = dataChunkAt(bytes);
  if (data === null) return bytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  view.setUint32(4, bytes.byteLength - 8, true);
  view.setUint32(data + 4, bytes.byteLength - data - 8, true);
  return bytes;
}
