/** Default for `tools.max_result_bytes`. */
export const DEFAULT_MAX_RESULT_BYTES = 65536;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? 'null');

/** The marker appended where text was cut: the model must know it saw only a part. */
export function truncationMarker(keptBytes: number, totalBytes: number): string {
  return `\n…[truncated: showing the first ${keptBytes} of ${totalBytes} bytes]`;
}

/** Cuts a string to at most `bytes` UTF-8 bytes, never inside a character. */
export function cutUtf8(text: string, bytes: number): string {
  const buffer = Buffer.from(text, 'utf8');
  if (buffer.length <= bytes) return text;
  let end = Math.max(0, bytes);
  // Back off continuation bytes (10xxxxxx) so the cut falls between characters.
  while (end > 0 && ((buffer[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return buffer.subarray(0, end).toString('utf8');
}

function cutWithMarker(text: string, bytes: number): string {
  const total = Buffer.byteLength(text);
  const kept = cutUtf8(text, Math.max(0, bytes - truncationMarker(total, total).length));
  return kept + truncationMarker(Buffer.byteLength(kept), total);
}

type Leaf = { holder: Record<string, unknown> | unknown[]; key: string | number; text: string };

function stringLeaves(value: unknown, leaves: Leaf[] = []): Leaf[] {
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      if (typeof item === 'string') leaves.push({ holder: value, key: index, text: item });
      else stringLeaves(item, leaves);
    });
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const holder = value as Record<string, unknown>;
      if (typeof item === 'string') leaves.push({ holder, key, text: item });
      else stringLeaves(item, leaves);
    }
  }
  return leaves;
}

/** Shrinks `room` until what `make(room)` builds fits `maxBytes` of JSON (escaping overshoots). */
function fit(maxBytes: number, room: number, make: (room: number) => unknown): unknown {
  for (;;) {
    const value = make(Math.max(0, room));
    const over = jsonBytes(value) - maxBytes;
    if (over <= 0 || room <= 0) return value;
    room -= over;
  }
}

/**
 * Keeps a tool result within `maxBytes` of JSON. Over the limit, the longest strings are
 * cut first, each with a marker saying how much was kept, so a result keeps its shape (an
 * http_fetch result keeps its url and status, its text is cut). If cutting strings is not
 * enough (a huge array of numbers), the result becomes `{truncated: true, preview}` with
 * the start of its JSON. Results within the limit come back unchanged (same object).
 */
export function truncateResult(result: unknown, maxBytes: number): unknown {
  const total = jsonBytes(result);
  if (total <= maxBytes) return result;
  if (typeof result === 'string') {
    return fit(maxBytes, maxBytes - 2, (room) => cutWithMarker(result, room));
  }
  const copy = structuredClone(result);
  const originals = new Map<object, Map<string | number, string>>();
  for (let round = 0; round < 64; round += 1) {
    const over = jsonBytes(copy) - maxBytes;
    if (over <= 0) return copy;
    const longest = stringLeaves(copy).sort((a, b) => b.text.length - a.text.length)[0];
    // A string shorter than a few markers is not worth cutting: fall back to the preview.
    if (!longest || Buffer.byteLength(longest.text) < 256) break;
    const holder = longest.holder as Record<string | number, unknown>;
    const size = Buffer.byteLength(longest.text);
    // A string cut before is cut again from its original, so it carries one marker.
    const cuts = originals.get(longest.holder) ?? new Map<string | number, string>();
    originals.set(longest.holder, cuts);
    const original = cuts.get(longest.key) ?? longest.text;
    cuts.set(longest.key, original);
    // Escaping can make the encoded text longer than its UTF-8 bytes: the loop goes again.
    holder[longest.key] = cutWithMarker(original, Math.max(0, size - over));
  }
  if (jsonBytes(copy) <= maxBytes) return copy;
  const json = JSON.stringify(result) ?? 'null';
  const envelope = { truncated: true, original_bytes: total, preview: '' };
  return fit(maxBytes, maxBytes - jsonBytes(envelope), (room) => ({
    ...envelope,
    preview: cutWithMarker(json, room),
  }));
}
