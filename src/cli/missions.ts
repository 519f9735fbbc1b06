import { randomBytes } from 'node:crypto';
import { ParleyClient } from '../client/index.js';
import type { ParleyEvent } from '../protocol/events.js';
import { apiCaller } from './apiCall.js';

/**
 * `parley missions list | run NAME [--input JSON] [--follow]`, `parley executions list |
 * show ID | cancel ID` and `parley schedules list`: through a running server's API (they
 * work on embedded storage too), like the other operator commands.
 */
interface Options {
  url?: string | undefined;
  key?: string | undefined;
  json?: boolean | undefined;
  input?: string | undefined;
  follow?: boolean | undefined;
  limit?: string | undefined;
  mission?: string | undefined;
  status?: string | undefined;
}

const ended = new Set(['success', 'cancelled', 'timeout', 'error', 'limit_reached']);
const write = (line: string) => process.stdout.write(`${line}\n`);
const print = (value: unknown) => write(JSON.stringify(value, null, 2));

function table(rows: string[][]): void {
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)) + 2) ??
    [];
  for (const row of rows)
    write(
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('')
        .trimEnd(),
    );
}

export async function missionsCommand(
  topic: 'missions' | 'executions' | 'schedules',
  args: string[],
  options: Options,
): Promise<number> {
  const call = apiCaller(options);
  const [action, target] = args;

  if (topic === 'schedules' && action === 'list') {
    const { items } = (await call('GET', '/api/v1/schedules')) as {
      items: Record<string, string | null>[];
    };
    if (options.json) print(items);
    else if (items.length === 0) write('(no schedules)');
    else
      table([
        ['SCHEDULE', 'MISSION', 'CRON', 'TIMEZONE', 'NEXT FIRE', 'LAST FIRE'],
        ...items.map((item) => [
          String(item.name),
          String(item.mission),
          String(item.cron),
          String(item.timezone),
          item.next_fire_at ?? '-',
          item.last_fire_at ?? '-',
        ]),
      ]);
    return 0;
  }

  if (topic === 'missions' && action === 'list') {
    const { items } = (await call('GET', '/api/v1/missions')) as {
      items: Record<string, unknown>[];
    };
    if (options.json) print(items);
    else if (items.length === 0) write('(no missions)');
    else
      table([
        ['MISSION', 'NAMESPACE', 'AGENT', 'LOOP', 'MAX', 'DELAY'],
        ...items.map((item) => [
          String(item.name),
          String(item.namespace),
          String(item.agent),
          item.loop ? 'yes' : 'no',
          String(item.max_iterations),
          `${String(item.loop_delay_seconds)}s`,
        ]),
      ]);
    return 0;
  }

  if (topic === 'missions' && action === 'run' && target) {
    let input: unknown;
    try {
      input = options.input === undefined ? undefined : JSON.parse(options.input);
    } catch {
      process.stderr.write('parley missions run: --input must be JSON\n');
      return 2;
    }
    const executionId = `cli_${randomBytes(9).toString('base64url')}`;
    const execution = await call(
      'POST',
      `/api/v1/missions/${encodeURIComponent(target)}/executions`,
      {
        execution_id: executionId,
        ...(input === undefined ? {} : { input }),
      },
    );
    write(`execution ${executionId} of ${target} (session ${String(execution.session_id)})`);
    if (!options.follow) return 0;
    const status = await follow(options, executionId, String(execution.session_id));
    return status === 'success' ? 0 : 1;
  }

  if (topic === 'executions' && action === 'list') {
    const query = new URLSearchParams({ limit: String(Number(options.limit ?? 50)) });
    if (options.mission) query.set('mission', options.mission);
    if (options.status) query.set('status', options.status);
    const page = await call('GET', `/api/v1/executions?${query.toString()}`);
    const items = page.items as Record<string, unknown>[];
    if (options.json) print(page);
    else if (items.length === 0) write('(no executions)');
    else
      table([
        ['EXECUTION', 'MISSION', 'STATUS', 'LOOP', 'ITER', 'USER', 'CREATED'],
        ...items.map((item) => [
          String(item.execution_id),
          String(item.mission),
          String(item.status),
          typeof item.loop_status === 'string' ? item.loop_status : '-',
          `${String(item.iteration)}/${String(item.max_iterations)}`,
          String(item.user),
          String(item.created_at),
        ]),
      ]);
    return 0;
  }
  if (topic === 'executions' && action === 'show' && target) {
    print(await call('GET', `/api/v1/executions/${encodeURIComponent(target)}`));
    return 0;
  }
  if (topic === 'executions' && action === 'cancel' && target) {
    const answer = await call('POST', `/api/v1/executions/${encodeURIComponent(target)}/cancel`, {
      command_id: `cli_${randomBytes(9).toString('base64url')}`,
    });
    write(`${target}: ${String(answer.result)} (${String(answer.status)})`);
    return 0;
  }
  const usage: Record<typeof topic, string> = {
    missions: 'usage: parley missions list | run NAME [--input JSON] [--follow]',
    executions: 'usage: parley executions list [--mission M] [--status S] | show ID | cancel ID',
    schedules: 'usage: parley schedules list',
  };
  process.stderr.write(`${usage[topic]}\n`);
  return 2;
}

/**
 * Follows an execution on its session's event stream until it ends, with a progress line:
 * iteration, status, and tokens (its turns' `usage` events and its evaluations').
 */
async function follow(options: Options, executionId: string, sessionId: string): Promise<string> {
  const client = new ParleyClient({
    baseUrl: (options.url ?? process.env.PARLEY_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, ''),
    apiKey: options.key ?? process.env.PARLEY_API_KEY,
  });
  const tty = Boolean(process.stdout.isTTY);
  let turnTokens = 0;
  let evaluationTokens = 0;
  let last = '';
  let final = 'unknown';
  const progress = (event: Extract<ParleyEvent, { type: 'execution_status' }>) => {
    const loop = event.loop_status ? ` (${event.loop_status})` : '';
    const line = `iteration ${event.iteration}/${event.max_iterations} · ${event.status}${loop} · ${turnTokens + evaluationTokens} tokens`;
    if (line === last) return;
    last = line;
    if (tty) process.stdout.write(`\r\u001b[2K${line}`);
    else write(line);
  };
  const subscription = client.subscribe(sessionId, {
    stopOnTerminal: false,
    onEvent: (event) => {
      if (event.type === 'usage') turnTokens += event.input_tokens + event.output_tokens;
      if (event.type !== 'execution_status' || event.execution_id !== executionId) return;
      evaluationTokens = (event.usage?.input_tokens ?? 0) + (event.usage?.output_tokens ?? 0);
      progress(event);
      if (ended.has(event.status)) {
        final = event.status;
        if (tty) process.stdout.write('\n');
        const result = event.result as { content?: unknown; error?: { message?: string } } | null;
        if (typeof result?.content === 'string') write(result.content);
        else if (result?.error?.message) write(`error: ${result.error.message}`);
        subscription.close();
      }
    },
  });
  await subscription.whenStopped();
  return final;
}
