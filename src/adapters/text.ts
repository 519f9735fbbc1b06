/**
 * Text from a platform, made storable and bounded before it reaches the database:
 * PostgreSQL refuses NUL and jsonb refuses a lone surrogate, so both become U+FFFD (a
 * platform message is repaired, never dropped: refusing it would lose it for good); a
 * message over the configured size is cut at a character boundary, with a marker.
 */
export function platformText(text: string, maxBytes: number): string {
  const repaired = (
    text.replaceAll('\u0000', '\uFFFD') as string & {
      toWellFormed(): string;
    }
  ).toWellFormed();
  if (Buffer.byteLength(repaired) <= maxBytes) return repaired;
  const marker = ' […]';
  let cut = Buffer.from(repaired)
    .subarray(0, maxBytes - Buffer.byteLength(marker))
    .toString();
  // A multi-byte character cut in half decodes as U+FFFD at the end: drop it.
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return `${cut}${marker}`;
}

/** Any string from a platform (an id, a name), made storable as above. */
export function storable(text: string): string {
  return (
    text.replaceAll('\u0000', '\uFFFD') as string & { toWellFormed(): string }
  ).toWellFormed();
}
