import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Queryable } from '../../src/store/db.js';
import { failed, type RunFacts } from './report.js';

/**
 * The run's timeline as a hand-written SVG: what the chaos did (kills, pauses, restarts)
 * as marks on one lane per process, and the turns that ended (journaled `done`,
 * `cancelled` or `error`) as a cumulative curve. Times are seconds from the run's start.
 */
export interface TimelineMark {
  /** Seconds from the start of the run. */
  atS: number;
  kind: 'kill' | 'stop' | 'restart';
  /** The lane: a process (`worker 1`, `api 0`, `serve 0`) or `postgres`. */
  target: string;
}

export interface Timeline {
  marks: TimelineMark[];
  /** When each turn ended, seconds from the start of the run, ascending. */
  endedS: number[];
  /** Seconds: the chaos phase ends here (shaded before). */
  chaosS: number;
  totalS: number;
  title: string;
}

const colours = { kill: '#d7301f', stop: '#fd8d3c', restart: '#2b8cbe' } as const;

export function renderTimeline(timeline: Timeline): string {
  const lanes = [...new Set(timeline.marks.map((mark) => mark.target))].sort();
  const width = 900;
  const left = 90;
  const right = 20;
  const laneHeight = 18;
  const curveTop = 40;
  const curveHeight = 160;
  const lanesTop = curveTop + curveHeight + 40;
  const height = lanesTop + lanes.length * laneHeight + 50;
  const span = Math.max(1, timeline.totalS);
  const x = (seconds: number) => left + ((width - left - right) * seconds) / span;
  const total = timeline.endedS.length;
  const y = (count: number) => curveTop + curveHeight - (curveHeight * count) / Math.max(1, total);
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${left}" y="20" font-size="13">${escape(timeline.title)}</text>`,
    `<rect x="${x(0)}" y="${curveTop}" width="${x(timeline.chaosS) - x(0)}" height="${height - curveTop - 30}" fill="#f4f4f4"/>`,
  );
  // The cumulative curve of ended turns: a step per end.
  let path = `M${x(0).toFixed(1)},${y(0).toFixed(1)}`;
  timeline.endedS.forEach((seconds, index) => {
    path += ` H${x(seconds).toFixed(1)} V${y(index + 1).toFixed(1)}`;
  });
  path += ` H${x(span).toFixed(1)}`;
  parts.push(
    `<path d="${path}" fill="none" stroke="#238b45" stroke-width="1.5"/>`,
    `<text x="${left - 6}" y="${y(total) + 4}" text-anchor="end">${total}</text>`,
    `<text x="${left - 6}" y="${y(0) + 4}" text-anchor="end">0</text>`,
    `<text x="${left - 6}" y="${curveTop + curveHeight / 2}" text-anchor="end">ends journaled</text>`,
  );
  lanes.forEach((lane, index) => {
    const laneY = lanesTop + index * laneHeight;
    parts.push(
      `<text x="${left - 6}" y="${laneY + 4}" text-anchor="end">${escape(lane)}</text>`,
      `<line x1="${x(0)}" x2="${x(span)}" y1="${laneY}" y2="${laneY}" stroke="#ddd"/>`,
    );
    for (const mark of timeline.marks.filter((candidate) => candidate.target === lane)) {
      const markX = x(mark.atS).toFixed(1);
      parts.push(
        mark.kind === 'restart'
          ? `<circle cx="${markX}" cy="${laneY}" r="3" fill="${colours.restart}"><title>${mark.kind} ${escape(lane)} at ${mark.atS.toFixed(1)} s</title></circle>`
          : `<rect x="${Number(markX) - 3}" y="${laneY - 6}" width="6" height="12" fill="${colours[mark.kind]}"><title>${mark.kind} ${escape(lane)} at ${mark.atS.toFixed(1)} s</title></rect>`,
      );
    }
  });
  const axisY = height - 30;
  parts.push(`<line x1="${x(0)}" x2="${x(span)}" y1="${axisY}" y2="${axisY}" stroke="#999"/>`);
  const step = niceStep(span);
  for (let tick = 0; tick <= span; tick += step) {
    parts.push(
      `<line x1="${x(tick)}" x2="${x(tick)}" y1="${axisY}" y2="${axisY + 4}" stroke="#999"/>`,
      `<text x="${x(tick)}" y="${axisY + 16}" text-anchor="middle">${tick} s</text>`,
    );
  }
  const legend = [
    ['SIGKILL', colours.kill],
    ['SIGSTOP', colours.stop],
    ['restart', colours.restart],
    ['ends journaled', '#238b45'],
    ['chaos phase', '#ccc'],
  ];
  legend.forEach(([label, colour], index) => {
    const legendX = width - right - (legend.length - index) * 95;
    parts.push(
      `<rect x="${legendX}" y="10" width="10" height="10" fill="${colour}"/>`,
      `<text x="${legendX + 14}" y="19">${label}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function niceStep(span: number): number {
  for (const step of [5, 10, 15, 30, 60, 120, 300, 600]) if (span / step <= 12) return step;
  return 1200;
}

/** Text for an SVG (XML) text node. */
export function escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** What a slot went through, as marks (epoch ms in, seconds from `beganMs` out). */
export function slotMarks(
  slots: { name: string; history: { atMs: number; kind: TimelineMark['kind'] }[] }[],
  beganMs: number,
): TimelineMark[] {
  return slots.flatMap((slot) =>
    slot.history.map((entry) => ({
      atS: (entry.atMs - beganMs) / 1000,
      kind: entry.kind,
      target: slot.name,
    })),
  );
}

/** When each turn ended, from the journal's terminal events (seconds from `beganMs`). */
export async function endedTimes(db: Queryable, beganMs: number): Promise<number[]> {
  const found = await db.query<{ at: Date | string }>(
    `select at from events where type in ('done', 'cancelled', 'error') order by at`,
  );
  return found.rows
    .map((row) => (new Date(row.at).getTime() - beganMs) / 1000)
    .filter((seconds) => seconds >= 0);
}

/**
 * Writes `report.json` (the figures, every violation, the timeline's data) and
 * `timeline.svg` beside it into `directory`; returns their paths.
 */
export function writeRunReport(
  directory: string,
  facts: RunFacts,
  timeline: Timeline,
): { json: string; svg: string } {
  mkdirSync(directory, { recursive: true });
  const json = join(directory, 'report.json');
  const svg = join(directory, 'timeline.svg');
  const { ledger, check, ...rest } = facts;
  const report = {
    ...rest,
    turns: ledger.turns.size,
    counters: ledger.counters,
    totals: check.totals,
    effects: check.effects,
    budgetExtensions: check.budgetExtensions,
    media: check.media,
    violations: check.findings.violations,
    passed: !failed(facts),
    timeline,
  };
  writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(svg, renderTimeline(timeline));
  return { json, svg };
}
