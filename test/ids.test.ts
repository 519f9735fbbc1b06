import { describe, expect, it } from 'vitest';
import { newLeaseToken, newMessageId, newSessionId, pooledRandom } from '../src/ids.js';

describe('server-made identifiers', () => {
  it('draws ulid randomness from a pool: fractions of one byte, fresh across refills', () => {
    const random = pooledRandom(16);
    const drawn = Array.from({ length: 64 }, () => random());
    for (const value of drawn) {
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
      expect(Number.isInteger(value * 256)).toBe(true);
    }
    // Four refills of 16 bytes: the chance that two of them are equal is 2^-128.
    const refills = [0, 16, 32, 48].map((start) => drawn.slice(start, start + 16).join());
    expect(new Set(refills).size).toBe(4);
  });

  it('makes unique, sortable ulids', () => {
    const ids = Array.from({ length: 10_000 }, () => newSessionId());
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(newMessageId()).toMatch(/^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('makes lease tokens of eighteen random bytes, never the same, across pool refills', () => {
    // The pool holds 256 tokens: this crosses several refills.
    const tokens = Array.from({ length: 1_000 }, () => newLeaseToken());
    expect(new Set(tokens).size).toBe(tokens.length);
    for (const token of tokens) {
      expect(token).toMatch(/^[A-Za-z0-9_-]{24}$/);
      expect(Buffer.from(token, 'base64url')).toHaveLength(18);
    }
  });
});
