import { effectTools, type EffectLedger, type EffectTool } from '../effects.js';
import { where, type Findings, type Journal } from './findings.js';
import type { EventRow } from './snapshot.js';

/** What the effect tools did, for the figures. */
export interface EffectTotals {
  /** Keys with an effect in the external ledger. */
  performed: number;
  /** Calls journaled `interrupted`: in doubt after a crash, and said so. */
  interrupted: number;
  /** Idempotent calls performed more than once (run again after a crash). */
  rerun: number;
}

/** Result codes that mean the tool was started and may have acted. */
const mayHaveRun = new Set(['interrupted', 'timeout', 'aborted', 'tool_failed']);

/**
 * Side effects outside Parley (scripts/soak/effects.ts) against the journal:
 * - a non-idempotent effect is performed at most once (Parley never re-runs such a call);
 * - every effect has its call journaled (`tool_call` with its key);
 * - every call journaled as run (`ok: true`) has its effect;
 * - every call that acted has a result once its turn ended, and that result does not say
 *   the call never ran (rejected, superseded, cancelled, unavailable...): a call in doubt
 *   after a crash is journaled `interrupted`, or ran again when its tool is idempotent
 *   (unless its session was parked: its turn ended, and nothing of it runs again).
 */
export function checkEffects(
  journal: Journal,
  ledger: EffectLedger,
  findings: Findings,
): EffectTotals {
  const byExposed = new Map(
    (Object.keys(effectTools) as EffectTool[]).map((tool) => [effectTools[tool].exposed, tool]),
  );
  const proposed = new Map<string, EventRow[]>();
  const results = new Map<string, EventRow>();
  for (const event of journal.snapshot.events) {
    if (event.type === 'tool_call' && byExposed.has(String(event.payload?.tool))) {
      const key = event.payload?.arguments?.key;
      if (typeof key === 'string') proposed.set(key, [...(proposed.get(key) ?? []), event]);
    }
    if (event.type === 'tool_result') results.set(String(event.payload?.call_id), event);
  }
  // A step streamed by an attempt that was then reset is proposed again under a new call
  // id: the call of a key is the one with a result, else the latest.
  const callsByKey = new Map<string, EventRow>();
  for (const [key, calls] of proposed) {
    const settled = calls.find((call) => results.has(String(call.payload?.call_id)));
    callsByKey.set(key, settled ?? (calls[calls.length - 1] as EventRow));
  }
  const totals: EffectTotals = { performed: ledger.effects.size, interrupted: 0, rerun: 0 };

  for (const effect of ledger.effects.values()) {
    const { idempotent } = effectTools[effect.tool];
    if (effect.performed > 1) {
      if (idempotent) totals.rerun += 1;
      else {
        findings.add(
          'doubled',
          'non-idempotent effect once',
          `${effect.tool} ${effect.key} was performed ${effect.performed} times`,
        );
      }
    }
    const call = callsByKey.get(effect.key);
    if (!call) {
      findings.add(
        'lost',
        'every effect has its call',
        `${effect.tool} ${effect.key} acted but no tool_call with that key is journaled`,
      );
      continue;
    }
    const result = results.get(String(call.payload?.call_id));
    if (!result) {
      // A turn still open is the drain's finding ("unfinished"); an ended one must say.
      if (journal.terminalOf(String(call.turn_id)) !== null) {
        findings.add(
          'lost',
          'in-doubt call accounted',
          `${where(call)}: ${effect.tool} ${effect.key} acted, its turn ended, and the call has no result`,
        );
      }
      continue;
    }
    const code = String(result.payload?.error?.code ?? '');
    if (result.payload?.ok !== true && !mayHaveRun.has(code)) {
      findings.add(
        'mismatch',
        'not run means not run',
        `${where(result)}: ${effect.tool} ${effect.key} acted but its result says ${code}`,
      );
    }
    if (code === 'interrupted') {
      totals.interrupted += 1;
      // A parked session's turn ends for good (RUNTIME.md, "Parking"): nothing of it runs
      // again, so the calls it had under way are journaled interrupted, idempotent or not.
      const end = journal.terminalOf(String(call.turn_id));
      const parked = end?.type === 'error' && end.payload?.code === 'session_parked';
      if (idempotent && !parked) {
        findings.add(
          'mismatch',
          'idempotent call runs again',
          `${where(result)}: ${effect.key} of the idempotent ${effect.tool} was recorded interrupted instead of run again`,
        );
      }
    }
  }

  for (const [key, call] of callsByKey) {
    const result = results.get(String(call.payload?.call_id));
    if (result?.payload?.ok === true && !ledger.effects.has(key)) {
      findings.add(
        'lost',
        'every run call has its effect',
        `${where(result)}: call ${String(call.payload?.call_id)} (${key}) is journaled as run but the tool never acted`,
      );
    }
  }
  return totals;
}
