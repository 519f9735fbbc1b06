import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { planKills } from '../scripts/soak/embedded.js';
import { OptionsError, parseOptions, type SoakOptions } from '../scripts/soak/options.js';
import { Outside } from '../scripts/soak/outside.js';
import { renderTimeline } from '../scripts/soak/timeline.js';

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

  it('--without-platforms (or its variable) leaves the platform traffic out', () => {
    expect(parseOptions([], {})).toMatchObject({ withoutPlatforms: false });
    expect(parseOptions(['--without-platforms'], {})).toMatchObject({ withoutPlatforms: true });
    expect(parseOptions([], { PARLEY_SOAK_WITHOUT_PLATFORMS: '1' })).toMatchObject({
      withoutPlatforms: true,
    });
  });

  it('configures, drives and checks Telegram and Slack unless --without-platforms', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'parley-soak-outside-'));
    const started: Outside[] = [];
    try {
      const withPlatforms = await Outside.start(parseOptions(['--short'], {}) as SoakOptions);
      started.push(withPlatforms);
      const adapters = parse(
        readFileSync(withPlatforms.writeConfig(directory, 'postgres'), 'utf8'),
      ).adapters;
      expect(Object.keys(adapters).sort()).toEqual(['slack', 'telegram']);
      expect(withPlatforms.platformEvidence().map((platform) => platform.platform)).toEqual([
        'telegram',
        'slack',
      ]);
      // Slack's posts carry a key (their metadata, read back); Telegram's carry none.
      expect(
        withPlatforms.platformEvidence().map((platform) => platform.idempotencyKey !== null),
      ).toEqual([false, true]);
      const without = await Outside.start(
        parseOptions(['--short', '--without-platforms'], {}) as SoakOptions,
      );
      started.push(without);
      const config = parse(readFileSync(without.writeConfig(directory, 'postgres'), 'utf8'));
      expect(config.adapters).toBeUndefined();
      expect(config.webhooks.soak).toBeDefined();
      expect(without.telegram).toBeNull();
      expect(without.slack).toBeNull();
      expect(without.platformEvidence()).toEqual([]);
      // One embedded process runs a queue of executions slower: its queue fires less often.
      expect(config.schedules.tick_queue.cron).toBe('*/3 * * * * *');
      const embedded = parse(readFileSync(without.writeConfig(directory, 'pglite'), 'utf8'));
      expect(embedded.schedules.tick_queue.cron).toBe('*/10 * * * * *');
      // ...and takes as many turns at once as the PostgreSQL soak's three workers together.
      expect(config.runtime.max_parallel_turns).toBe(8);
      expect(embedded.runtime.max_parallel_turns).toBe(24);
    } finally {
      for (const outside of started) await outside.close();
      rmSync(directory, { recursive: true, force: true });
    }
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

describe('the soak timeline', () => {
  it('draws one lane per process, a mark per kill, pause and restart, and a step per ended turn', () => {
    const svg = renderTimeline({
      marks: [
        { atS: 3, kind: 'kill', target: 'worker 0' },
        { atS: 4.5, kind: 'restart', target: 'worker 0' },
        { atS: 9, kind: 'stop', target: 'worker 2' },
        { atS: 12, kind: 'restart', target: 'postgres' },
      ],
      endedS: [1, 2, 2.5, 10],
      chaosS: 15,
      totalS: 20,
      title: 'npm run soak -- --seed 1 <test>',
    });
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg.match(/<title>kill /g)).toHaveLength(1);
    expect(svg.match(/<title>stop /g)).toHaveLength(1);
    expect(svg.match(/<title>restart /g)).toHaveLength(2);
    for (const lane of ['worker 0', 'worker 2', 'postgres'])
      expect(svg).toContain(`>${lane}</text>`);
    // The curve climbs once per ended turn, and the title is escaped.
    expect(svg.match(/ V/g)).toHaveLength(4);
    expect(svg).toContain('&lt;test&gt;');
  });
});
