import { describe, expect, it } from 'vitest';
import { OptionsError, parseOptions } from '../scripts/soak/options.js';
import { Pacer } from '../scripts/soak/pacer.js';
import { Random } from '../scripts/soak/random.js';
import { planChaos } from '../scripts/soak/schedule.js';

// The soak's plan is a function of its seed: the same seed gives the same chaos schedule
// and the same client choices, so a failing run can be repeated with its printed seed.

const shape = { durationMs: 300_000, workers: 3, apis: 2, leaseTtlMs: 3_000 };

describe('the chaos schedule', () => {
  it('is the same for the same seed and differs for another', () => {
    expect(planChaos(42, shape)).toEqual(planChaos(42, shape));
    expect(planChaos(43, shape)).not.toEqual(planChaos(42, shape));
  });

  it('has every kind of failure, one PostgreSQL restart, in time order, inside the run', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      for (const durationMs of [20_000, 45_000, 300_000]) {
        const actions = planChaos(seed, { ...shape, durationMs });
        const kinds = actions.map((action) => action.kind);
        expect(new Set(kinds)).toEqual(
          new Set(['kill_worker', 'stop_worker', 'kill_api', 'restart_postgres']),
        );
        expect(kinds.filter((kind) => kind === 'restart_postgres')).toHaveLength(1);
        const times = actions.map((action) => action.atMs);
        expect(times).toEqual([...times].sort((a, b) => a - b));
        expect(Math.min(...times)).toBeGreaterThan(0);
        expect(Math.max(...times)).toBeLessThan(durationMs);
      }
    }
  });

  it('pauses workers past their lease and targets existing processes', () => {
    const actions = planChaos(7, shape);
    for (const action of actions) {
      if (action.kind === 'stop_worker') expect(action.pausedMs).toBeGreaterThan(shape.leaseTtlMs);
      if (action.kind === 'kill_worker' || action.kind === 'stop_worker') {
        expect(action.target).toBeGreaterThanOrEqual(0);
        expect(action.target).toBeLessThan(shape.workers);
      }
      if (action.kind === 'kill_api') expect(action.target).toBeLessThan(shape.apis);
    }
    // A five-minute run kills workers often (a mean of one every 6 s).
    expect(actions.filter((action) => action.kind === 'kill_worker').length).toBeGreaterThan(25);
  });
});

describe('seeded choices', () => {
  it('a forked generator depends on the seed and its label only', () => {
    const draw = (random: Random) => Array.from({ length: 5 }, () => random.next());
    const first = new Random(9);
    const second = new Random(9);
    draw(second); // drawing from the parent must not change what a fork yields
    expect(draw(first.fork('session-1'))).toEqual(draw(second.fork('session-1')));
    expect(draw(first.fork('session-1'))).not.toEqual(draw(first.fork('session-2')));
  });
});

describe('soak options', () => {
  it('defaults to the full run, --short to the CI preset, flags over environment', () => {
    const full = parseOptions([], {});
    expect(full).toMatchObject({ turns: 1000, sessions: 60, clients: 8, durationMs: 300_000 });
    const short = parseOptions(['--short', '--seed', '5'], { PARLEY_SOAK_TURNS: '90' });
    expect(short).toMatchObject({ short: true, seed: 5, turns: 90, durationMs: 45_000 });
    expect(parseOptions(['--turns', '10'], { PARLEY_SOAK_TURNS: '90' })).toMatchObject({
      turns: 10,
    });
  });

  it('refuses what cannot run', () => {
    expect(() => parseOptions(['--turns', 'many'], {})).toThrow(OptionsError);
    expect(() => parseOptions(['--sessions', '2', '--clients', '4'], {})).toThrow(OptionsError);
    expect(() => parseOptions(['--postgres-restart', 'slow'], {})).toThrow(OptionsError);
  });
});

describe('the pacer', () => {
  it('grants exactly the run budget of turns, never more', async () => {
    const pacer = new Pacer(5, 0);
    const granted = [
      await pacer.take(2),
      await pacer.take(2),
      await pacer.take(2),
      await pacer.take(1),
    ];
    expect(granted).toEqual([2, 2, 1, 0]);
    expect(pacer.remaining).toBe(0);
  });
});
