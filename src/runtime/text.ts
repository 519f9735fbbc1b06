/**
 * Text from a model, made storable: PostgreSQL text and jsonb refuse NUL, and jsonb
 * refuses a lone surrogate. Both become U+FFFD rather than failing the turn (and, retried,
 * parking the session) over one bad character.
 */
export function wellFormed(text: string): string {
  const clean = text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
  return (clean as string & { toWellFormed(): string }).toWellFormed();
}

/** The same for any JSON value a model produced (tool arguments). */
export function wellFormedJson(value: unknown): unknown {
  if (typeof value === 'string') return wellFormed(value);
  if (Array.isArray(value)) return value.map(wellFormedJson);
  if (value === null || typeof value !== 'object') return value;
  const clean: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    Object.defineProperty(clean, wellFormed(key), {
      value: wellFormedJson(item),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return clean;
}
