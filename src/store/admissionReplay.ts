import { ParleyError } from '../errors.js';
import type { Admission, AdmitTurnInput } from './admitTurn.js';
import type { Queryable } from './db.js';

/**
 * A `turn_id` already admitted: found by its whole key, and its admission answered again
 * — the same input is the same answer (idempotency), a different one `turn_conflict`.
 */

export interface TurnRow {
  session_id: string;
  fingerprint: string;
  admitted_sequence: number;
  agent: string;
  state: string;
}

export async function findAdmittedTurn(
  tx: Queryable,
  tenant: string,
  turnId: string,
): Promise<TurnRow | null> {
  const found = await tx.query<TurnRow>(
    `select t.session_id, encode(t.fingerprint, 'hex') as fingerprint, t.admitted_sequence,
            t.state, s.agent
       from turns t join sessions s on s.session_id = t.session_id
      where t.tenant = $1 and t.turn_id = $2`,
    [tenant, turnId],
  );
  return found.rows[0] ?? null;
}

export function replayAdmission(
  input: AdmitTurnInput,
  fingerprint: string,
  existing: TurnRow,
): Admission {
  const sameSession = input.sessionId === null || input.sessionId === existing.session_id;
  const sameAgent = input.agent === null || input.agent === existing.agent;
  // A turn admitted before fingerprints were 16 bytes holds the whole 32: its prefix.
  const sameInput = existing.fingerprint.slice(0, fingerprint.length) === fingerprint;
  if (!sameSession || !sameAgent || !sameInput) {
    throw new ParleyError('turn_conflict', 'this turn_id was already used for a different input');
  }
  return {
    session_id: existing.session_id,
    turn_id: input.turnId,
    sequence: existing.admitted_sequence,
    state: existing.state === 'stored' ? 'stored' : 'accepted',
  };
}
