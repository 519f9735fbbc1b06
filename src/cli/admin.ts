import { apiCaller } from './apiCall.js';

/**
 * `parley sessions …` and `parley prune`: operator commands that talk to a running
 * server over HTTP, so they work on embedded storage too (one process owns it).
 */
interface Options {
  url?: string | undefined;
  key?: string | undefined;
  limit?: string | undefined;
  json?: boolean | undefined;
  'older-than-days'?: string | undefined;
  'older-than-seconds'?: string | undefined;
  rules?: string | undefined;
  'batch-size'?: string | undefined;
}

export async function adminCommand(
  command: string,
  args: string[],
  options: Options,
): Promise<number> {
  const call = apiCaller(options);
  const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

  if (command === 'prune') {
    const days = options['older-than-days'];
    const seconds = options['older-than-seconds'];
    if ((days === undefined) === (seconds === undefined)) {
      process.stderr.write(
        'parley prune: give --older-than-days N or --older-than-seconds N [--rules events,deliveries,sessions,usage] [--batch-size N]\n',
      );
      return 2;
    }
    const result = await call('POST', '/api/v1/admin/prune', {
      ...(days !== undefined
        ? { older_than_days: Number(days) }
        : { older_than_seconds: Number(seconds) }),
      ...(options.rules === undefined ? {} : { rules: options.rules.split(',') }),
      ...(options['batch-size'] === undefined ? {} : { batch_size: Number(options['batch-size']) }),
    });
    if (options.json) {
      print(result);
      return 0;
    }
    process.stdout.write(
      `pruned ${String(result.pruned_events)} events in ${String(result.sessions)} sessions\n`,
    );
    const removed = Object.entries(result.removed as Record<string, number>).filter(
      ([, count]) => count > 0,
    );
    for (const [table, count] of removed) {
      process.stdout.write(`  ${table.padEnd(22)}${String(count)}\n`);
    }
    if (removed.length === 0) process.stdout.write('  (nothing was old enough)\n');
    if (result.skipped) {
      process.stdout.write('another pruner was at work: it removes the rest\n');
    }
    return 0;
  }

  const [action, id] = args;
  if (action === 'list') {
    const page = await call('GET', `/api/v1/chat/sessions?limit=${Number(options.limit ?? 50)}`);
    if (options.json) print(page);
    else {
      const items = page.items as {
        session_id: string;
        state: string;
        agent: string;
        latest_sequence: number;
        updated_at: string;
      }[];
      process.stdout.write(
        `${'SESSION'.padEnd(28)}${'STATE'.padEnd(16)}${'AGENT'.padEnd(12)}${'SEQ'.padEnd(8)}UPDATED\n`,
      );
      for (const item of items) {
        process.stdout.write(
          `${item.session_id.padEnd(28)}${item.state.padEnd(16)}${item.agent.padEnd(12)}${String(item.latest_sequence).padEnd(8)}${item.updated_at}\n`,
        );
      }
      if (items.length === 0) process.stdout.write('(no sessions)\n');
    }
    return 0;
  }
  if ((action === 'show' || action === 'unpark') && id) {
    const path =
      action === 'show'
        ? `/api/v1/chat/sessions/${encodeURIComponent(id)}`
        : `/api/v1/admin/sessions/${encodeURIComponent(id)}/unpark`;
    const session = await call(action === 'show' ? 'GET' : 'POST', path);
    if (action === 'unpark') process.stdout.write(`unparked ${id}: now ${String(session.state)}\n`);
    else print(session);
    return 0;
  }
  process.stderr.write('usage: parley sessions list | show ID | unpark ID\n');
  return 2;
}
