import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { engineFreeFiles, surfaceFiles } from './support/legs.js';

describe('the legs of npm test', () => {
  it('name files that exist, once each, none tied to one engine by its name', () => {
    const listed = [...engineFreeFiles, ...surfaceFiles];
    expect(listed.filter((file) => !existsSync(file))).toEqual([]);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed.filter((file) => /\.(pglite|postgres)\.test\.ts$/.test(file))).toEqual([]);
  });
});
