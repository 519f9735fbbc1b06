/**
 * What the mission clients were told, recorded as they are told it: every execution
 * acknowledged with 202 must be in the database and end exactly once; every cancel or
 * unblock answered `cancelled` / `unblocked` must have been applied, once.
 */

/** What a dispatch meant to exercise; the checker knows what to expect of each. */
export type ExecutionKind = 'once' | 'loop' | 'limit' | 'blocked' | 'fanout' | 'cancel';

export interface DispatchedExecution {
  executionId: string;
  mission: string;
  kind: ExecutionKind;
  /** Fan-out threads asked for (their ids are `<executionId>.1` …). */
  threads: number;
  /** 202 answers received for this execution_id (retries and deliberate double sends). */
  acknowledgements: number;
}

export interface ExecutionCommandRecord {
  executionId: string;
  commandId: string;
  kind: 'cancel' | 'unblock';
  /** The first answer's result and status. */
  result: 'cancelled' | 'unblocked' | 'duplicate' | 'too_late';
  status: string;
  /** Unblock only: the note sent, which the next iteration's message carries. */
  note: string | null;
}

export class MissionLedger {
  readonly executions = new Map<string, DispatchedExecution>();
  readonly commands: ExecutionCommandRecord[] = [];
  readonly violations: { check: string; detail: string }[] = [];
  readonly counters = {
    dispatchAttempts: 0,
    dispatchRetries: 0,
    doubleDispatches: 0,
    /** Dispatches given up on without any 202. */
    unacknowledged: 0,
    cancelsSent: 0,
    unblocksSent: 0,
    /** Unblocks refused because the execution was not (or no longer) blocked. */
    notBlocked: 0,
  };

  violation(check: string, detail: string): void {
    this.violations.push({ check, detail });
  }

  acknowledge(dispatched: Omit<DispatchedExecution, 'acknowledgements'>): void {
    const known = this.executions.get(dispatched.executionId);
    if (known) known.acknowledgements += 1;
    else this.executions.set(dispatched.executionId, { ...dispatched, acknowledgements: 1 });
  }
}
