import type { z } from 'zod';
import { ParleyError } from '../errors.js';

/** Parses a body or query with a zod schema; failures name the field, never its value. */
export function validate<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.map(String).join('.') || '(body)';
  throw new ParleyError('invalid_request', `${field}: ${issue?.message ?? 'invalid'}`, { field });
}
