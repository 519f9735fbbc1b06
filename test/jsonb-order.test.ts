import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Db } from '../src/store/db.js';
import { jsonbOrder } from '../src/store/eventRows.js';
import { openTestDb } from './support/db.js';

/**
 * A payload ordered in memory (`jsonbOrder`, for events carried live in a wake-up)
 * serialises to the same bytes as the same payload read back from a jsonb column (the
 * replay, parsed as the driver parses it): keys by byte length, then bytewise, at every
 * depth — ASCII or not. Keys that are array indices ("0", "10") come first on both paths:
 * a JavaScript object lists them first whatever order they were added in.
 */

let db: Db;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ db, close } = await openTestDb());
});
afterAll(async () => {
  await close?.();
});

const key = fc
  .oneof(
    fc.string({ maxLength: 6 }),
    fc.string({ unit: 'grapheme', maxLength: 3 }),
    fc.constantFrom('__proto__', 'é', 'z', 'ü', '日本', 'turn_ids', 'type', '0', '10', '2'),
  )
  .filter((text) => !text.includes('\u0000'));
const payload = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.integer(),
    fc.string({ maxLength: 4 }).filter((text) => !text.includes('\u0000')),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    tie('object'),
  ),
  object: fc.dictionary(key, tie('value'), { maxKeys: 6, noNullPrototype: true }),
})).object;

it('orders keys as a jsonb column gives them back', async () => {
  await fc.assert(
    fc.asyncProperty(payload, async (value) => {
      const text = JSON.stringify(value);
      const stored = await db.query<{ text: string }>('select ($1::jsonb)::text as text', [text]);
      const replayed = JSON.stringify(JSON.parse(stored.rows[0]?.text as string));
      expect(JSON.stringify(jsonbOrder(JSON.parse(text)))).toBe(replayed);
    }),
    { numRuns: 300 },
  );
});
