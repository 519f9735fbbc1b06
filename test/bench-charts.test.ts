import { describe, expect, it } from 'vitest';
import {
  historyChart,
  niceTicks,
  renderBarChart,
  scalingChart,
  throughputChart,
} from '../bench/charts.js';

/** Well-formed enough for a browser and an <img>: one root, every tag closed in order. */
function expectWellFormed(svg: string): void {
  expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
  const stack: string[] = [];
  for (const match of svg.matchAll(/<(\/?)([a-zA-Z][\w:-]*)([^>]*?)(\/?)>/g)) {
    const [, closing, name, , selfClosing] = match;
    if (selfClosing) continue;
    if (closing) expect(stack.pop()).toBe(name);
    else stack.push(name as string);
  }
  expect(stack).toEqual([]);
  // Text is escaped: no stray markup characters between tags.
  for (const text of svg.split(/<[^>]*>/)) expect(text).not.toMatch(/[<>]|&(?!amp;|lt;|gt;)/);
}

const bars = (svg: string) => [...svg.matchAll(/<rect class="bar"[^>]*><title>([^<]*)<\/title>/g)];

const provenance = {
  date: '2026-12-02T01:00:00.000Z',
  revision: { commit: '0123456789abcdef' },
  machine: { cpus: 2, load_average_1m_before: 0.4, load_average_1m_after: 1.2 },
};

describe('bench charts', () => {
  it('draws a labelled bar per value, skips missing ones, and a labelled reference line', () => {
    const svg = renderBarChart({
      title: 'Throughput <by> process & count',
      unit: 'turns/s',
      groups: ['1 worker', '2 workers'],
      series: [
        { label: 'one API', values: [100, 180] },
        { label: 'two APIs', values: [null, 190.5] },
      ],
      references: [{ label: 'the peer (elsewhere)', value: 93.8 }],
      note: 'a note',
    });
    expectWellFormed(svg);
    expect(svg).toContain('Throughput &lt;by&gt; process &amp; count');
    expect(svg).toContain('>one API</text>');
    expect(svg).toContain('>two APIs</text>');
    expect(bars(svg).map((bar) => bar[1])).toEqual([
      'one API, 1 worker: 100 turns/s',
      'one API, 2 workers: 180 turns/s',
      'two APIs, 2 workers: 191 turns/s',
    ]);
    expect(svg.match(/<line class="reference"/g)).toHaveLength(1);
    expect(svg).toContain('the peer (elsewhere): 93.8 turns/s');
    expect(svg).toContain('a note');
  });

  it('ticks start at zero and pass the largest value in round steps', () => {
    expect(niceTicks(93.8)).toEqual([0, 20, 40, 60, 80, 100, 120]);
    expect(niceTicks(0.42)).toEqual([0, 0.1, 0.2, 0.3, 0.4, 0.5]);
    expect(niceTicks(0)).toEqual([0, 1]);
  });

  it('charts the scaling matrix: a group per worker count, a series per API count', () => {
    const chart = scalingChart({
      ...provenance,
      cells: [
        { workers: 1, apis: 1, turns_per_s: 90 },
        { workers: 1, apis: 2, turns_per_s: 95 },
        { workers: 4, apis: 1, turns_per_s: 120 },
        { workers: 4, apis: 2, turns_per_s: 125 },
      ],
      peer: { turns_per_s: 93.8, source: 'LangGraph peer, bench/results/latest.json' },
    });
    expect(chart.groups).toEqual(['1 worker', '4 workers']);
    expect(chart.series.map((series) => series.label)).toEqual([
      '1 API process',
      '2 API processes',
    ]);
    const svg = renderBarChart(chart);
    expectWellFormed(svg);
    expect(bars(svg)).toHaveLength(4);
    expect(svg).toContain('LangGraph peer, bench/results/latest.json: 93.8 turns/s');
    expect(svg).toContain('0123456');
  });

  it('charts npm run bench: Parley beside the peer, and ms per turn by history length', () => {
    const engine = (turns: number, peer: { turns_per_s: number } | null) => ({
      throughput: { turns_per_s: turns, sessions: 8, turns_per_session: 20 },
      peer_shaped: {
        turns_per_s: turns + 10,
        plan: { threads: 100, turnsPerThread: 10, concurrency: 8 },
        peer,
      },
      history: [1, 50, 200].map((level) => ({
        history_turns: level,
        median_turn_ms: 8 + level / 20,
        measured_turns_per_run: 10,
      })),
    });
    const report = {
      ...provenance,
      method: { runs: 3 },
      results: { pglite: engine(126, null), postgres: engine(133, { turns_per_s: 93.8 }) },
    };
    const throughput = renderBarChart(throughputChart(report));
    expectWellFormed(throughput);
    expect(throughput).toContain('>Parley, PGlite</text>');
    expect(throughput).toContain('>Parley, PostgreSQL</text>');
    expect(throughput).toContain('>LangGraph peer, PostgreSQL (same run)</text>');
    // Two workloads × two engines, and the peer's one bar.
    expect(bars(throughput)).toHaveLength(5);
    expect(throughput).toContain('LangGraph peer, PostgreSQL (same run), peer-shaped 100×10 at 8');

    const history = historyChart(report);
    expect(history.groups).toEqual([
      '1–30 prior turns',
      '50–79 prior turns',
      '200–229 prior turns',
    ]);
    const svg = renderBarChart(history);
    expectWellFormed(svg);
    expect(bars(svg)).toHaveLength(6);
    expect(svg).toContain('PostgreSQL, 200–229 prior turns: 18.0 ms per turn (median)');
  });

  it('leaves out an engine that was skipped, and the peer when it did not run', () => {
    const report = {
      ...provenance,
      method: { runs: 3 },
      results: {
        pglite: {
          throughput: { turns_per_s: 120, sessions: 8, turns_per_session: 20 },
          peer_shaped: {
            turns_per_s: 110,
            plan: { threads: 100, turnsPerThread: 10, concurrency: 8 },
            peer: null,
          },
          history: [],
        },
        postgres: { skipped: 'no PostgreSQL' },
      },
    };
    const chart = throughputChart(report);
    expect(chart.series.map((series) => series.label)).toEqual(['Parley, PGlite']);
    expect(bars(renderBarChart(chart))).toHaveLength(2);
  });
});
