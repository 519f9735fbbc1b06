import type { Ledger } from '../ledger.js';
import type { Findings, Journal } from './findings.js';

/**
 * Every turn_id that got a 202 is in the database, in the session the 202 named, with its
 * user message at the sequence the 202 named. (That it then ended exactly once is
 * `checkTerminals`' business, for every turn in the database.)
 */
export function checkAcknowledged(journal: Journal, ledger: Ledger, findings: Findings): void {
  const messageAt = new Map<string, string | null>();
  for (const event of journal.snapshot.events) {
    if (event.type !== 'message') continue;
    messageAt.set(`${event.session_id} ${event.sequence}`, event.turn_id);
  }
  for (const turn of ledger.turns.values()) {
    const row = journal.turns.get(turn.turnId);
    if (!row) {
      findings.add(
        'lost',
        'acknowledged turn kept',
        `turn ${turn.turnId} got 202 (session ${turn.sessionId} #${turn.sequence}) and is not in the database`,
      );
      continue;
    }
    // An answer that named no sequence (an OpenAI response) is held to its session alone.
    const sequence = turn.sequence ?? row.admitted_sequence;
    if (row.session_id !== turn.sessionId || row.admitted_sequence !== sequence) {
      findings.add(
        'mismatch',
        'acknowledged turn kept',
        `turn ${turn.turnId} got 202 for session ${turn.sessionId} #${turn.sequence}, the database has session ${row.session_id} #${row.admitted_sequence}`,
      );
    }
    if (messageAt.get(`${turn.sessionId} ${sequence}`) !== turn.turnId) {
      findings.add(
        'lost',
        'acknowledged turn kept',
        `turn ${turn.turnId}: no message event of it at session ${turn.sessionId} #${turn.sequence}`,
      );
    }
  }
}

/**
 * RUNTIME.md: on SIGTERM a worker releases its leases. So once every process has been
 * stopped that way, no session may hold a lease taken by one of them. (A lease left by a
 * SIGKILLed worker on a session with nothing pending stays until the next input claims
 * it: expired, harmless, and not this rule's business.)
 */
export function checkAtRest(journal: Journal, stoppedPids: Set<number>, findings: Findings): void {
  for (const session of journal.snapshot.sessions) {
    if (session.lease_token === null || session.lease_owner === null) continue;
    const pid = Number(session.lease_owner.slice(session.lease_owner.lastIndexOf(':') + 1));
    if (stoppedPids.has(pid)) {
      findings.add(
        'mismatch',
        'leases released at shutdown',
        `session ${session.session_id} (${session.state}) still holds the lease of ${session.lease_owner}, which was stopped with SIGTERM`,
      );
    }
  }
}
