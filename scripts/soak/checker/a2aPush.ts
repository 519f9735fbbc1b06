import type { Db } from '../../../src/store/db.js';
import type { PushReceipt } from '../a2aPush.js';
import type { PushRecord } from '../ledger.js';
import type { Findings } from './findings.js';

/** What the checker is told of the A2A push notifications: what the receiver got. */
export interface PushEvidence {
  receipts: PushReceipt[];
  /** POSTs that were not a task's status update. */
  invalid: string[];
}

interface ConfigRow {
  push_id: string;
  task_id: string;
  token: string | null;
  finished: boolean;
}

interface PushDeliveryRow {
  delivery_id: string;
  push_id: string;
  sequence: number;
  state: string;
  attempts: number;
  last_error: string | null;
}

export interface PushRows {
  configs: ConfigRow[];
  deliveries: PushDeliveryRow[];
}

export interface PushFigures {
  configs: number;
  deliveries: number;
  receipts: number;
  /** Notifications accepted (2xx) more than once: redeliveries, each with the same id. */
  duplicates: number;
}

export async function readPushes(db: Db): Promise<PushRows> {
  const configs = await db.query<ConfigRow>(
    'select push_id, task_id, token, finished from a2a_push_configs order by push_id',
  );
  const deliveries = await db.query<PushDeliveryRow>(
    `select delivery_id, push_id, sequence::int as sequence, state, attempts, last_error
       from webhook_deliveries where target = 'a2a_push' order by push_id, sequence`,
  );
  return { configs: configs.rows, deliveries: deliveries.rows };
}

/**
 * A2A push notifications (docs/protocols.md, "A2A") against the configs, their deliveries
 * and what the receiver got:
 * - `a2a push delivered` (lost): every notification enqueued was delivered (not
 *   dead-lettered) and accepted (2xx) by the receiver under its id; every task the client
 *   sent with a config has a config that went on to the task's end (`finished`), and its
 *   last notification accepted is `completed` with the reply the stream gave;
 * - `a2a push duplicates carry the same id` (mismatch): every POST names a notification
 *   of its config, with its config's token, and all POSTs of one id carry the same body;
 * - `a2a push order per config` (order): the first acceptance of each of a config's
 *   notifications comes in journal order.
 */
export function checkPushes(
  records: PushRecord[],
  rows: PushRows,
  evidence: PushEvidence,
  findings: Findings,
): PushFigures {
  const configs = new Map(rows.configs.map((row) => [row.push_id, row]));
  const byId = new Map(rows.deliveries.map((row) => [row.delivery_id, row]));
  const accepted = evidence.receipts.filter((receipt) => receipt.status < 300);
  const acceptedIds = new Set(accepted.map((receipt) => receipt.id));

  for (const row of rows.deliveries) {
    const where = `push ${row.push_id} #${row.sequence} (${row.delivery_id})`;
    if (row.state !== 'delivered') {
      findings.add(
        'lost',
        'a2a push delivered',
        `${where}: ${row.state} after ${row.attempts} attempts (${row.last_error ?? 'no error'})`,
      );
    } else if (!acceptedIds.has(row.delivery_id)) {
      findings.add(
        'lost',
        'a2a push delivered',
        `${where}: marked delivered, the receiver never accepted it`,
      );
    }
  }

  const bodies = new Map<string, string>();
  for (const receipt of evidence.receipts) {
    const row = byId.get(receipt.id);
    const where = `POST ${receipt.id} (task ${receipt.taskId} ${receipt.state})`;
    const config = row ? configs.get(row.push_id) : undefined;
    if (!row || !config) {
      findings.add(
        'mismatch',
        'a2a push duplicates carry the same id',
        `${where}: no such notification`,
      );
      continue;
    }
    if (config.task_id !== receipt.taskId || (config.token ?? '') !== receipt.token) {
      findings.add(
        'mismatch',
        'a2a push duplicates carry the same id',
        `${where}: its config is task ${config.task_id}, another token or task`,
      );
    }
    const body = bodies.get(receipt.id);
    if (body === undefined) bodies.set(receipt.id, receipt.body);
    else if (body !== receipt.body) {
      findings.add(
        'mismatch',
        'a2a push duplicates carry the same id',
        `${where}: a retry carried another body`,
      );
    }
  }

  // First acceptances per config, in arrival order: journal order, the last one the end.
  const firsts = new Map<string, PushReceipt[]>();
  const seen = new Set<string>();
  let duplicates = 0;
  for (const receipt of accepted) {
    const row = byId.get(receipt.id);
    if (!row) continue;
    if (seen.has(receipt.id)) {
      duplicates += 1;
      continue;
    }
    seen.add(receipt.id);
    const list = firsts.get(row.push_id) ?? [];
    const previous = list.at(-1);
    const before = previous ? (byId.get(previous.id)?.sequence ?? 0) : 0;
    if (row.sequence < before) {
      findings.add(
        'order',
        'a2a push order per config',
        `push ${row.push_id}: #${row.sequence} first accepted after #${before}`,
      );
    }
    list.push(receipt);
    firsts.set(row.push_id, list);
  }

  for (const record of records) {
    const where = `${record.label} (task ${record.taskId})`;
    const config = rows.configs.find(
      (row) => row.task_id === record.taskId && row.token === record.token,
    );
    if (!config) {
      findings.add('lost', 'a2a push delivered', `${where}: no push config`);
      continue;
    }
    if (!config.finished) {
      findings.add(
        'lost',
        'a2a push delivered',
        `${where}: the config never reached the task's end`,
      );
      continue;
    }
    const last = firsts.get(config.push_id)?.at(-1);
    if (!last || last.state !== 'TASK_STATE_COMPLETED') {
      findings.add(
        'lost',
        'a2a push delivered',
        `${where}: the last notification accepted is ${last?.state ?? 'none'}, not completed`,
      );
    } else if (last.text !== record.reply) {
      findings.add(
        'mismatch',
        'a2a push duplicates carry the same id',
        `${where}: completed with "${last.text.slice(0, 80)}"`,
      );
    }
  }
  for (const body of evidence.invalid) {
    findings.add(
      'mismatch',
      'a2a push duplicates carry the same id',
      `a POST that was no status update: ${body}`,
    );
  }
  return {
    configs: rows.configs.length,
    deliveries: rows.deliveries.length,
    receipts: evidence.receipts.length,
    duplicates,
  };
}
