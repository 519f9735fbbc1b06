import { apiCaller } from './apiCall.js';

/**
 * `parley models list` and `parley models sync [PROVIDER]`: the model catalog, through a
 * running server's API (embedded storage belongs to the process that opened it).
 */
export async function modelsCommand(
  args: string[],
  options: { url?: string | undefined; key?: string | undefined; json?: boolean | undefined },
): Promise<number> {
  const call = apiCaller(options);
  const [action, provider, ...extra] = args;
  if (action === 'list' && provider === undefined) {
    const page = await call('GET', '/api/v1/models');
    if (options.json) {
      process.stdout.write(`${JSON.stringify(page, null, 2)}\n`);
      return 0;
    }
    const items = page.items as {
      model: string;
      status: string;
      capabilities: {
        tools: boolean | null;
        vision: boolean | null;
        reasoning: boolean | null;
        context_window: number | null;
      };
    }[];
    const flag = (value: boolean | null, letter: string) =>
      value === null ? '?' : value ? letter : '-';
    process.stdout.write(`${'MODEL'.padEnd(44)}${'CAPS'.padEnd(6)}${'CONTEXT'.padEnd(10)}STATUS\n`);
    for (const item of items) {
      const caps = item.capabilities;
      process.stdout.write(
        `${item.model.padEnd(44)}${(flag(caps.tools, 't') + flag(caps.vision, 'v') + flag(caps.reasoning, 'r')).padEnd(6)}${String(caps.context_window ?? '?').padEnd(10)}${item.status}\n`,
      );
    }
    if (items.length === 0) process.stdout.write('(no models)\n');
    return 0;
  }
  if (action === 'sync' && extra.length === 0) {
    const result = await call(
      'POST',
      '/api/v1/admin/models/sync',
      provider === undefined ? {} : { provider },
    );
    const reports = result.providers as {
      provider: string;
      ok: boolean;
      error: string | null;
      added: string[];
      removed: string[];
      active: number;
    }[];
    if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else {
      for (const report of reports) {
        process.stdout.write(
          report.ok
            ? `${report.provider}: ${report.active} models (${report.added.length} new, ${report.removed.length} removed)\n`
            : `${report.provider}: sync failed — ${report.error}\n`,
        );
      }
    }
    return reports.every((report) => report.ok) ? 0 : 1;
  }
  process.stderr.write('usage: parley models list | sync [PROVIDER]\n');
  return 2;
}
