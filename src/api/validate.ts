import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { clientKeyPattern } from '../ids.js';
import { decodeCursor } from '../store/listSessions.js';

/** Parses a body or query with a zod schema; failures name the field, never its value. */
export function validate<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.map(String).join('.') || '(body)';
  throw new ParleyError('invalid_request', `${field}: ${issue?.message ?? 'invalid'}`, { field });
}

/**
 * Text the database can store: no NUL (PostgreSQL text refuses it) and no unpaired
 * surrogate (jsonb refuses it, and it is not Unicode text).
 */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && (text as string & { isWellFormed(): boolean }).isWellFormed();
}

const storable = 'must not contain NUL characters or unpaired surrogates';

/** A string field of a request: storable text. */
export function text(): z.ZodString {
  return z.string().refine(isStorableText, storable);
}

/**
 * Every string anywhere in an arbitrary JSON value (an answer's `response`) is storable,
 * keys included.
 */
export function storableJson(value: unknown): boolean {
  if (typeof value === 'string') return isStorableText(value);
  if (Array.isArray(value)) return value.every(storableJson);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).every(([key, item]) => isStorableText(key) && storableJson(item));
  }
  return true;
}

/**
 * A path segment naming a resource (a session, a turn, a request): storable text of at
 * most 128 characters, else 400 before any query runs.
 */
/**
 * A request's `Idempotency-Key` header (a client key: 1-128 of A-Z a-z 0-9 _ -), or null
 * when it sent none.
 */
export function idempotencyKeyOf(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  const key = Array.isArray(header) ? header[0] : header;
  if (typeof key !== 'string' || !clientKeyPattern.test(key)) {
    throw new ParleyError(
      'invalid_request',
      'Idempotency-Key: 1-128 characters of A-Z a-z 0-9 _ -',
      {
        field: 'Idempotency-Key',
      },
    );
  }
  return key;
}

/**
 * A listing's cursor of a time and an id (`encodeCursor([time, id])`, the last item's), as
 * this server made it; anything else is `400 invalid_cursor` naming `field`.
 */
export function timeCursor(value: string, field = 'cursor'): { at: string; id: string } {
  const parts = decodeCursor(value);
  const [at, id] = parts ?? [];
  if (
    parts?.length !== 2 ||
    typeof at !== 'string' ||
    typeof id !== 'string' ||
    !isCursorTime(at)
  ) {
    throw new ParleyError('invalid_cursor', `${field}: not a cursor this server made`, { field });
  }
  return { at, id: pathId(id, field) };
}

export function pathId(value: string, name: string): string {
  if (value.length === 0 || value.length > 128 || !isStorableText(value)) {
    throw new ParleyError('invalid_request', `${name}: not a valid identifier`, { field: name });
  }
  return value;
}

/**
 * A time exactly as a listing's cursor carries one (`toISOString`) and the database reads:
 * no rolled-over day (JavaScript takes Feb 30 for Mar 2), no year 0 (PostgreSQL refuses it).
 */
export function isCursorTime(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(value)) return false;
  const time = Date.parse(value);
  return (
    !Number.isNaN(time) &&
    time >= Date.parse('0001-01-01T00:00:00.000Z') &&
    new Date(time).toISOString() === value
  );
}
