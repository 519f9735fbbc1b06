import { describe, expect, it } from 'vitest';
import { planKills } from '../scripts/soak/embedded.js';
import { OptionsError, parseOptions } from '../scripts/soak/options.js';

describe('soak presets and engines', () => {
  it('--long is the preset of at least 10,000 turns; --engine picks the storage', () => {
    const long = parseOptions(['--long'], {});
    expect(long).toMatchObject({ long: true, short: false, engine: 'postgres' });
    expect((long as { turns: number }).turns).toBeGreaterThanOrEqual(10_000);
    expect(parseOptions(['--short', '--engine', 'pglite'], {})).toMatchObject({
      short: true,
      engine: 'pglite',
      turns: 150,
    });
    expect(parseOptions([], { PARLEY_SOAK_ENGINE: 'pglite' })).toMatchObject({ engine: 'pglite' });
  });

  it('refuses an unknown engine, and --short with --long', () => {
    expect(() => parseOptions(['--engine', 'sqlite'], {})).toThrow(OptionsError);
    expect(() => parseOptions(['--short', '--long'], {})).toThrow(OptionsError);
  });

  it('plans the embedded engine kills from the seed alone, inside the chaos phase', () => {
    const kills = planKills(42, 60_000);
    expect(planKills(42, 60_000)).toEqual(kills);
    expect(planKills(43, 60_000)).not.toEqual(kills);
    expect(kills.length).toBeGreaterThan(0);
    for (const kill of kills) {
      expect(kill.atMs).toBeGreaterThan(0);
      expect(kill.atMs).toBeLessThan(60_000);
    }
  });
});
