import { execFileSync } from 'node:child_process';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyChart, renderBarChart, throughputChart } from './charts.js';
import { round } from './stats.js';

/** What the benchmarks write: JSON as the repository formats it, and the revision measured. */

/** Formatted as the repository's Prettier would (so `npm run lint` passes on the file). */
export async function formatJson(path: string, value: unknown): Promise<string> {
  const text = `${JSON.stringify(value, null, 2)}\n`;
  try {
    const prettier = await import('prettier');
    const options = (await prettier.resolveConfig(path)) ?? {};
    return await prettier.format(text, { ...options, parser: 'json' });
  } catch {
    return text;
  }
}

/** The commit measured, and whether src/ differed from it (PARLEY_BENCH_REVISION overrides). */
/** The machine a report was measured on, and its load average before and after the run. */
export function machineFigures(loadBefore: number[]) {
  return {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? 'unknown',
    memory_gb: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    os: `${process.platform} ${release()}`,
    load_average_1m_before: round(loadBefore[0] as number, 2),
    load_average_1m_after: round(loadavg()[0] as number, 2),
  };
}

export function revision(root: string): { commit: string | null; src_modified: boolean | null } {
  if (process.env.PARLEY_BENCH_REVISION) {
    return { commit: process.env.PARLEY_BENCH_REVISION, src_modified: false };
  }
  try {
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', root, ...args], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    return {
      commit: git('rev-parse', 'HEAD'),
      src_modified: git('status', '--porcelain', '--', 'src').length > 0,
    };
  } catch {
    return { commit: null, src_modified: null };
  }
}

/**
 * The charts of `npm run bench`'s report, beside its JSON (`latest.json` →
 * `latest-throughput.svg`, `latest-history.svg`); returns their paths. Also runnable alone
 * on a report already written: `node --import tsx bench/output.ts bench/results/latest.json`.
 */
export function writeBenchCharts(jsonPath: string, report: unknown): string[] {
  const base = jsonPath.replace(/\.json$/, '');
  const charts = [
    [`${base}-throughput.svg`, throughputChart],
    [`${base}-history.svg`, historyChart],
  ] as const;
  return charts.map(([path, chart]) => {
    writeFileSync(path, renderBarChart(chart(report as Parameters<typeof chart>[0])));
    return path;
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const path = process.argv[2] ?? 'bench/results/latest.json';
  for (const written of writeBenchCharts(path, JSON.parse(readFileSync(path, 'utf8')))) {
    process.stdout.write(`${written}\n`);
  }
}
