import type { Db } from '../../../src/store/db.js';
import type { Receipt } from '../webhooks.js';
import type { Findings, Journal } from './findings.js';

/** What the checker is told of one endpoint: its name, its event types, what it received. */
export interface WebhookEvidence {
  webhook: string;
  events: string[];
  receipts: Receipt[];
  /** POSTs whose signature did not verify. */
  invalid: string[];
}

interface DeliveryRow {
  delivery_id: string;
  session_id: string;
  sequence: number;
  event_type: string;
  state: string;
  attempts: number;
  last_error: string | null;
}

export interface WebhookFigures {
  deliveries: number;
  receipts: number;
  /** Deliveries accepted (2xx) more than once: redeliveries, each with the same id. */
  duplicates: number;
  /** Accepted duplicates that came after a later event of their session was accepted. */
  lateDuplicates: number;
}

export async function readDeliveries(db: Db, webhook: string): Promise<DeliveryRow[]> {
  const found = await db.query<DeliveryRow>(
    `select delivery_id, session_id, sequence::int as sequence, event_type, state, attempts,
            last_error
       from webhook_deliveries where webhook = $1 order by session_id, sequence`,
    [webhook],
  );
  return found.rows;
}

/**
 * An outbound webhook (docs/adapters.md) against the journal and what its receiver got:
 * - `webhook delivered` (lost): every journal event of a subscribed type has a delivery,
 *   delivered (not dead-lettered), and the receiver accepted (2xx) a POST with its id;
 * - `webhook duplicates carry the same id` (mismatch / doubled): every POST names a
 *   delivery of the same session, sequence and type, and all POSTs of one id carry the
 *   same body; one event is never delivered under two ids;
 * - `webhook order per session` (order): the first acceptance of each of a session's
 *   events comes in journal order. (A redelivery of an event accepted once already may
 *   come later: at least once allows it, and it carries the same id. Counted, not a
 *   violation.)
 * - `webhook signature` (mismatch): every POST verified.
 */
export function checkWebhooks(
  journal: Journal,
  deliveries: DeliveryRow[],
  evidence: WebhookEvidence,
  findings: Findings,
): WebhookFigures {
  const byId = new Map(deliveries.map((row) => [row.delivery_id, row]));
  const byEvent = new Map<string, DeliveryRow[]>();
  for (const row of deliveries) {
    const key = `${row.session_id} ${row.sequence}`;
    byEvent.set(key, [...(byEvent.get(key) ?? []), row]);
  }
  const accepted = evidence.receipts.filter((receipt) => receipt.status < 300);
  const acceptedIds = new Set(accepted.map((receipt) => receipt.id));
  const types = new Set(evidence.events);

  for (const event of journal.snapshot.events) {
    if (!types.has(event.type)) continue;
    const where = `session ${event.session_id} #${event.sequence} ${event.type}`;
    const rows = byEvent.get(`${event.session_id} ${event.sequence}`) ?? [];
    if (rows.length > 1) {
      findings.add(
        'doubled',
        'webhook duplicates carry the same id',
        `${where}: ${rows.length} deliveries`,
      );
    }
    const row = rows[0];
    if (!row) {
      findings.add('lost', 'webhook delivered', `${where}: no delivery`);
      continue;
    }
    if (row.state !== 'delivered') {
      findings.add(
        'lost',
        'webhook delivered',
        `${where}: delivery ${row.delivery_id} is ${row.state} after ${row.attempts} attempts (${row.last_error ?? 'no error'})`,
      );
      continue;
    }
    if (!acceptedIds.has(row.delivery_id)) {
      findings.add(
        'lost',
        'webhook delivered',
        `${where}: delivery ${row.delivery_id} is marked delivered, the receiver never accepted it`,
      );
    }
  }

  const bodies = new Map<string, string>();
  for (const receipt of evidence.receipts) {
    const row = byId.get(receipt.id);
    const where = `POST ${receipt.id} (session ${receipt.sessionId} #${receipt.sequence} ${receipt.type})`;
    if (!row) {
      findings.add(
        'mismatch',
        'webhook duplicates carry the same id',
        `${where}: no such delivery`,
      );
      continue;
    }
    if (
      row.session_id !== receipt.sessionId ||
      row.sequence !== receipt.sequence ||
      row.event_type !== receipt.type
    ) {
      findings.add(
        'mismatch',
        'webhook duplicates carry the same id',
        `${where}: the delivery is session ${row.session_id} #${row.sequence} ${row.event_type}`,
      );
    }
    const body = bodies.get(receipt.id);
    if (body === undefined) bodies.set(receipt.id, receipt.body);
    else if (body !== receipt.body) {
      findings.add(
        'mismatch',
        'webhook duplicates carry the same id',
        `${where}: a retry carried another body`,
      );
    }
  }

  const figures: WebhookFigures = {
    deliveries: deliveries.length,
    receipts: evidence.receipts.length,
    duplicates: 0,
    lateDuplicates: 0,
  };
  const seen = new Set<string>();
  const highest = new Map<string, number>();
  for (const receipt of accepted) {
    const top = highest.get(receipt.sessionId) ?? 0;
    if (seen.has(receipt.id)) {
      figures.duplicates += 1;
      if (receipt.sequence < top) figures.lateDuplicates += 1;
      continue;
    }
    seen.add(receipt.id);
    if (receipt.sequence < top) {
      findings.add(
        'order',
        'webhook order per session',
        `session ${receipt.sessionId}: #${receipt.sequence} ${receipt.type} first accepted after #${top}`,
      );
    }
    highest.set(receipt.sessionId, Math.max(top, receipt.sequence));
  }
  for (const body of evidence.invalid) {
    findings.add('mismatch', 'webhook signature', `a POST that did not verify: ${body}`);
  }
  return figures;
}
