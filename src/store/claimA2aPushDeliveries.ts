import { claimOutbox } from './claimOutbox.js';
import type { Db } from './db.js';
import type { A2aWire } from './saveA2aPushConfig.js';

/** A push notification to send, with its config's URL and credentials as the client gave them. */
export interface ClaimedA2aPush {
  delivery_id: string;
  push_id: string;
  session_id: string;
  sequence: number;
  payload: unknown;
  attempts: number;
  url: string;
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
  /** The A2A version its config was made with: the notification's shape. */
  wire: A2aWire;
}

/**
 * Takes due A2A push notifications (claimOutbox.ts): pending, their retry time come, not
 * leased by a live sender, and each the first pending one of its config, so a task's
 * updates reach each receiver in journal order. The config is read as it is now (a
 * replaced URL or token applies to what is still pending).
 */
export function claimA2aPushDeliveries(
  db: Db,
  input: { token: string; leaseMs: number; limit: number },
): Promise<ClaimedA2aPush[]> {
  return claimOutbox<ClaimedA2aPush>(
    db,
    'a2aPushes',
    {
      returning: `r.delivery_id, r.push_id, r.session_id, r.sequence, r.payload, r.attempts,
                  p.url, p.token, p.auth_scheme, p.auth_credentials, p.wire`,
      join: { table: 'a2a_push_configs p', on: 'p.push_id = r.push_id' },
    },
    { senders: ['a2a_push'], token: input.token, leaseMs: input.leaseMs, limit: input.limit },
  );
}
