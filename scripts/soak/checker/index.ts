import type { Db } from '../../../src/store/db.js';
import type { EffectLedger } from '../effects.js';
import { Ledger } from '../ledger.js';
import { checkAcknowledged, checkAtRest } from './acknowledged.js';
import { checkBudgets } from './budgets.js';
import { checkEffects, type EffectTotals } from './effects.js';
import { Findings, Journal } from './findings.js';
import { checkGapless, checkOrder, checkTerminals } from './journal.js';
import { readSnapshot } from './snapshot.js';
import { checkTools, checkPromises } from './tools.js';
import { checkReplies, checkTranscript } from './transcript.js';

export { categories, type Category, type Violation } from './findings.js';

export interface CheckResult {
  findings: Findings;
  /** What the snapshot held, for the figures. */
  totals: { sessions: number; turns: number; events: number; toolResults: number };
  /** What the effect tools did, when their ledger was given. */
  effects: EffectTotals | null;
  /** Budget extension requests answered (by clients or the drain). */
  budgetExtensions: number;
}

/**
 * The soak's checker: reads the whole database in one snapshot and holds it to the
 * journal invariants (RUNTIME.md, PROTOCOL.md) and to what the clients were told
 * (`ledger`). `stoppedPids`: the processes stopped with SIGTERM, whose leases must all
 * have been released; `effects`: the external ledger of the effect tools' side effects.
 */
export async function checkDatabase(
  db: Db,
  ledger: Ledger = new Ledger(),
  options: { stoppedPids?: Set<number>; effects?: EffectLedger } = {},
): Promise<CheckResult> {
  const snapshot = await readSnapshot(db);
  const journal = new Journal(snapshot);
  const findings = new Findings();
  checkGapless(journal, findings);
  checkTerminals(journal, findings);
  checkOrder(journal, findings);
  checkTranscript(journal, findings);
  checkTools(journal, findings);
  checkAcknowledged(journal, ledger, findings);
  checkPromises(journal, ledger, findings);
  checkReplies(journal, ledger, findings);
  if (options.stoppedPids) checkAtRest(journal, options.stoppedPids, findings);
  const budgetExtensions = checkBudgets(journal, findings);
  const effects = options.effects ? checkEffects(journal, options.effects, findings) : null;
  for (const violation of ledger.violations) {
    // What clients saw on the wire (a gap in a stream, a changed 202) counts as well.
    findings.add(
      violation.check.includes('doubled') || violation.check.includes('duplicate')
        ? 'doubled'
        : violation.check.includes('gap')
          ? 'gap'
          : 'mismatch',
      `client: ${violation.check}`,
      violation.detail,
    );
  }
  return {
    findings,
    totals: {
      sessions: snapshot.sessions.length,
      turns: snapshot.turns.length,
      events: snapshot.events.length,
      toolResults: snapshot.events.filter((event) => event.type === 'tool_result').length,
    },
    effects,
    budgetExtensions,
  };
}
