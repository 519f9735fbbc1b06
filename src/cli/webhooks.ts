import { apiCaller } from './apiCall.js';

interface Options {
  url?: string | undefined;
  key?: string | undefined;
  json?: boolean | undefined;
}

interface Status {
  items: {
    name: string;
    scope: 'tenant' | 'all';
    url: string | null;
    events: string[];
    pending: number;
    delivered: number;
    dead: number;
    oldest_pending_at: string | null;
    last_error: string | null;
  }[];
  dead_letters: {
    delivery_id: string;
    webhook: string;
    session_id: string;
    sequence: number;
    event_type: string;
    attempts: number;
    last_error: string | null;
    created_at: string;
  }[];
}

/**
 * `parley webhooks status`: each endpoint's deliveries (pending, delivered, dead), the
 * oldest still pending and the last error, then the dead letters. Through a running
 * server's API (admin role), like `parley sessions`.
 */
export async function webhooksCommand(args: string[], options: Options): Promise<number> {
  if (args[0] !== 'status') {
    process.stderr.write('usage: parley webhooks status [--json]\n');
    return 2;
  }
  const status = (await apiCaller(options)('GET', '/api/v1/admin/webhooks')) as unknown as Status;
  if (options.json) {
    process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
    return 0;
  }
  if (status.items.length === 0) {
    process.stdout.write('(no webhooks configured)\n');
    return 0;
  }
  process.stdout.write(
    `${'WEBHOOK'.padEnd(16)}${'PENDING'.padEnd(9)}${'DELIVERED'.padEnd(11)}${'DEAD'.padEnd(6)}${'OLDEST PENDING'.padEnd(26)}URL\n`,
  );
  for (const item of status.items) {
    process.stdout.write(
      `${item.name.padEnd(16)}${String(item.pending).padEnd(9)}${String(item.delivered).padEnd(11)}${String(item.dead).padEnd(6)}${(item.oldest_pending_at ?? '-').padEnd(26)}${item.url ?? "(every tenant's: the operator's)"}\n`,
    );
    if (item.last_error) process.stdout.write(`  last error: ${item.last_error}\n`);
  }
  if (status.dead_letters.length > 0) {
    process.stdout.write('\nDead letters (newest first):\n');
    for (const dead of status.dead_letters) {
      process.stdout.write(
        `  ${dead.webhook} ${dead.delivery_id} session ${dead.session_id} #${dead.sequence} ${dead.event_type}: ${dead.attempts} attempts, ${dead.last_error ?? 'no error recorded'}\n`,
      );
    }
  }
  return 0;
}
