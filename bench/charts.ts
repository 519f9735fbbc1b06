import { escape } from '../scripts/soak/timeline.js';

/**
 * The benchmarks' charts: figures in, an SVG document out (no I/O, no clock), hand-written
 * like the soak's timeline (scripts/soak/timeline.ts), whose text escaping it shares. One
 * kind of chart serves every figure: grouped bars (a group per configuration or level, a
 * bar per series), each bar labelled with its value, and optional horizontal reference
 * lines (a figure measured elsewhere, e.g. the peer's).
 */
export interface BarChart {
  title: string;
  /** What the bars measure, on the vertical axis (e.g. `turns/s`). */
  unit: string;
  /** The groups along the horizontal axis (e.g. `1 worker`, `2 workers`). */
  groups: string[];
  /** One bar per group; null where the series has no figure for that group. */
  series: { label: string; values: (number | null)[] }[];
  /** Dashed lines across the chart, each labelled with where its figure came from. */
  references?: { label: string; value: number }[];
  /** A line of small print under the chart (the machine, the load, the revision). */
  note?: string;
}

/** Bar colours, by series (ColorBrewer's Set2: distinguishable, printable). */
const palette = ['#66c2a5', '#fc8d62', '#8da0cb', '#e78ac3', '#a6d854', '#ffd92f'];
const referenceColour = '#555';

export function renderBarChart(chart: BarChart): string {
  const width = 720;
  const left = 70;
  const right = 20;
  const top = 56;
  const plotHeight = 260;
  const references = chart.references ?? [];
  const height = top + plotHeight + 50 + (chart.note ? 18 : 0) + references.length * 16;
  const values = chart.series.flatMap((series) =>
    series.values.filter((value): value is number => value !== null && Number.isFinite(value)),
  );
  const ticks = niceTicks(Math.max(0, ...values, ...references.map((line) => line.value)));
  const ceiling = ticks[ticks.length - 1] as number;
  const y = (value: number) => top + plotHeight - (plotHeight * value) / ceiling;
  const plotWidth = width - left - right;
  const groupWidth = plotWidth / Math.max(1, chart.groups.length);
  const barWidth = Math.min(60, (groupWidth * 0.8) / Math.max(1, chart.series.length));
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${left}" y="20" font-size="14" font-weight="bold">${escape(chart.title)}</text>`,
  ];
  // Legend: one swatch per series, on one line under the title.
  let legendX = left;
  chart.series.forEach((series, index) => {
    parts.push(
      `<rect x="${legendX}" y="30" width="10" height="10" fill="${palette[index % palette.length]}"/>`,
      `<text x="${legendX + 14}" y="39">${escape(series.label)}</text>`,
    );
    legendX += 24 + series.label.length * 6.5;
  });
  // Axis and grid.
  for (const tick of ticks) {
    parts.push(
      `<line x1="${left}" x2="${width - right}" y1="${fixed(y(tick))}" y2="${fixed(y(tick))}" stroke="#eee"/>`,
      `<text x="${left - 6}" y="${fixed(y(tick) + 4)}" text-anchor="end">${formatTick(tick)}</text>`,
    );
  }
  parts.push(
    `<line x1="${left}" x2="${left}" y1="${top}" y2="${top + plotHeight}" stroke="#999"/>`,
    `<line x1="${left}" x2="${width - right}" y1="${top + plotHeight}" y2="${top + plotHeight}" stroke="#999"/>`,
    `<text x="14" y="${top + plotHeight / 2}" transform="rotate(-90 14 ${top + plotHeight / 2})" text-anchor="middle">${escape(chart.unit)}</text>`,
  );
  // Bars, group by group.
  chart.groups.forEach((group, groupIndex) => {
    const centre = left + groupWidth * (groupIndex + 0.5);
    const firstX = centre - (barWidth * chart.series.length) / 2;
    chart.series.forEach((series, seriesIndex) => {
      const value = series.values[groupIndex];
      if (value === null || value === undefined || !Number.isFinite(value)) return;
      const x = firstX + barWidth * seriesIndex;
      parts.push(
        `<rect class="bar" x="${fixed(x + 2)}" y="${fixed(y(value))}" width="${fixed(barWidth - 4)}" height="${fixed(top + plotHeight - y(value))}" fill="${palette[seriesIndex % palette.length]}"><title>${escape(`${series.label}, ${group}: ${formatValue(value)} ${chart.unit}`)}</title></rect>`,
        `<text x="${fixed(x + barWidth / 2)}" y="${fixed(y(value) - 4)}" text-anchor="middle" font-size="10">${formatValue(value)}</text>`,
      );
    });
    parts.push(
      `<text x="${fixed(centre)}" y="${top + plotHeight + 18}" text-anchor="middle">${escape(group)}</text>`,
    );
  });
  // Reference lines, labelled under the axis (a label on the line could hide a bar's value).
  references.forEach((line, index) => {
    const lineY = fixed(y(line.value));
    const labelY = top + plotHeight + 40 + index * 16;
    parts.push(
      `<line class="reference" x1="${left}" x2="${width - right}" y1="${lineY}" y2="${lineY}" stroke="${referenceColour}" stroke-dasharray="6 4"><title>${escape(`${line.label}: ${formatValue(line.value)} ${chart.unit}`)}</title></line>`,
      `<text x="${width - right - 4}" y="${fixed(y(line.value) - 4)}" text-anchor="end" fill="${referenceColour}">${formatValue(line.value)}</text>`,
      `<line x1="${left}" x2="${left + 24}" y1="${labelY - 4}" y2="${labelY - 4}" stroke="${referenceColour}" stroke-dasharray="6 4"/>`,
      `<text x="${left + 30}" y="${labelY}">${escape(`${line.label}: ${formatValue(line.value)} ${chart.unit}`)}</text>`,
    );
  });
  if (chart.note) {
    parts.push(
      `<text x="${left}" y="${height - 8}" font-size="10" fill="#666">${escape(chart.note)}</text>`,
    );
  }
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** Ticks from 0 past `max`, about five, at 1, 2 or 5 × a power of ten. */
export function niceTicks(max: number): number[] {
  if (!(max > 0)) return [0, 1];
  const rough = max / 5;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = ([1, 2, 5, 10].find((factor) => factor * power >= rough) ?? 10) * power;
  const ticks = [0];
  while ((ticks[ticks.length - 1] as number) < max * 1.08) {
    ticks.push(Number((ticks.length * step).toPrecision(12)));
  }
  return ticks;
}

function formatTick(value: number): string {
  return Number(value.toPrecision(6)).toString();
}

/** Three significant figures at most: 0.412, 12.3, 146. */
function formatValue(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 100) return Math.round(value).toString();
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function fixed(value: number): string {
  return value.toFixed(1);
}

// ---------------------------------------------------------------------------------------
// The charts of the benchmarks' JSON (only the fields each chart reads are typed).

interface Provenance {
  date: string;
  revision?: { commit: string | null };
  machine: { cpus: number; load_average_1m_before: number; load_average_1m_after: number };
}

function provenance(report: Provenance): string {
  const commit = report.revision?.commit ? report.revision.commit.slice(0, 7) : 'unknown revision';
  return `${report.date.slice(0, 10)}, ${commit}, ${report.machine.cpus} CPUs, load average ${report.machine.load_average_1m_before} before / ${report.machine.load_average_1m_after} after`;
}

/** `bench/results/scaling.json`: turns/s by worker processes, a bar per API process count. */
export function scalingChart(
  report: Provenance & {
    cells: { workers: number; apis: number; turns_per_s: number }[];
    peer: { turns_per_s: number; source: string } | null;
  },
): BarChart {
  const workers = [...new Set(report.cells.map((cell) => cell.workers))].sort((a, b) => a - b);
  const apis = [...new Set(report.cells.map((cell) => cell.apis))].sort((a, b) => a - b);
  return {
    title: 'Parley on one PostgreSQL: turns/s by process count (peer-shaped load)',
    unit: 'turns/s',
    groups: workers.map((count) => `${count} worker${count === 1 ? '' : 's'}`),
    series: apis.map((count) => ({
      label: `${count} API process${count === 1 ? '' : 'es'}`,
      values: workers.map(
        (workerCount) =>
          report.cells.find((cell) => cell.workers === workerCount && cell.apis === count)
            ?.turns_per_s ?? null,
      ),
    })),
    references: report.peer ? [{ label: report.peer.source, value: report.peer.turns_per_s }] : [],
    note: provenance(report),
  };
}

type EngineFigures = {
  throughput: { turns_per_s: number; sessions: number; turns_per_session: number };
  peer_shaped: {
    turns_per_s: number;
    plan: { threads: number; turnsPerThread: number; concurrency: number };
    peer: { turns_per_s: number } | null;
  };
  history: { history_turns: number; median_turn_ms: number; measured_turns_per_run: number }[];
};

interface LatestReport extends Provenance {
  results: { pglite?: unknown; postgres?: unknown };
  method: { runs: number };
}

const engineLabels = { pglite: 'PGlite', postgres: 'PostgreSQL' } as const;

/** The engines that ran to the end (neither skipped nor failed), with their figures. */
function enginesOf(report: LatestReport): { label: string; figures: EngineFigures }[] {
  return (['pglite', 'postgres'] as const).flatMap((engine) => {
    const figures = report.results[engine] as EngineFigures | { skipped: string } | undefined;
    if (!figures || !('throughput' in figures)) return [];
    return [{ label: engineLabels[engine], figures }];
  });
}

/**
 * `bench/results/latest.json`: turns/s of the two concurrent workloads, per engine, and the
 * LangGraph peer's beside them when it ran (on PostgreSQL, peer-shaped only).
 */
export function throughputChart(report: LatestReport): BarChart {
  const engines = enginesOf(report);
  const first = engines[0]?.figures;
  const plan = first?.peer_shaped.plan;
  const peer = engines.find((engine) => engine.figures.peer_shaped.peer)?.figures.peer_shaped.peer;
  return {
    title: 'Parley turns/s, HTTP + SSE, one process (npm run bench)',
    unit: 'turns/s',
    groups: [
      first
        ? `${first.throughput.sessions} sessions × ${first.throughput.turns_per_session} turns`
        : 'sessions × turns',
      plan
        ? `peer-shaped ${plan.threads}×${plan.turnsPerThread} at ${plan.concurrency}`
        : 'peer-shaped',
    ],
    series: [
      ...engines.map((engine) => ({
        label: `Parley, ${engine.label}`,
        values: [engine.figures.throughput.turns_per_s, engine.figures.peer_shaped.turns_per_s],
      })),
      ...(peer
        ? [{ label: 'LangGraph peer, PostgreSQL (same run)', values: [null, peer.turns_per_s] }]
        : []),
    ],
    note: provenance(report),
  };
}

/** `bench/results/latest.json`: a turn's wall time (POST to `done`) by history length. */
export function historyChart(report: LatestReport): BarChart {
  const engines = enginesOf(report);
  const levels = engines[0]?.figures.history ?? [];
  return {
    title: 'ms per turn by history length (npm run bench, phase 4)',
    unit: 'ms per turn (median)',
    groups: levels.map((level) => {
      const last = level.history_turns + report.method.runs * level.measured_turns_per_run - 1;
      return `${level.history_turns}–${last} prior turns`;
    }),
    series: engines.map((engine) => ({
      label: engine.label,
      values: levels.map(
        (level) =>
          engine.figures.history.find((found) => found.history_turns === level.history_turns)
            ?.median_turn_ms ?? null,
      ),
    })),
    note: provenance(report),
  };
}
