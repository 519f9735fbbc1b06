import type { ChaosCounters } from './chaos.js';
import { categories, type CheckResult, type Violation } from './checker/index.js';
import type { DrainResult } from './drain.js';
import type { Ledger } from './ledger.js';
import type { MissionLedger } from './missionLedger.js';
import type { ExecutionDrainResult } from './missions.js';
import type { SoakOptions } from './options.js';

export interface RunFacts {
  options: SoakOptions;
  ledger: Ledger;
  chaos: ChaosCounters;
  drain: DrainResult;
  /** Executions and schedules, when the run drove them (the PostgreSQL soak does). */
  missions?: { ledger: MissionLedger; drain: ExecutionDrainResult };
  check: CheckResult;
  /** Lines in worker output saying a lease was lost and the turn abandoned (token gate). */
  leasesLost: number;
  /** Client requests that got no answer, a 5xx or timed out (each then retried). */
  failedAttempts: number;
  unexpectedExits: string[];
  uncleanShutdowns: string[];
  /** Clients still running minutes after the chaos (the soak's own hang), by name. */
  hungClients: string[];
  chaosMs: number;
  totalMs: number;
}

/** The figures of a run as a Markdown table (docs/reliability.md publishes one). */
export function figuresTable(facts: RunFacts): string {
  const { ledger, chaos, drain, check, options } = facts;
  const counters = ledger.counters;
  const cancelled = ledger.cancels.filter((cancel) => cancel.result === 'cancelled').length;
  const tooLate = ledger.cancels.filter((cancel) => cancel.result === 'too_late').length;
  const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
  const rows: [string, string | number][] = [
    ['seed', options.seed],
    ['turns admitted (202)', ledger.turns.size],
    ['… by kind', byKind(ledger)],
    ['turns in the database', check.totals.turns],
    ['sessions', check.totals.sessions],
    ['journal events', check.totals.events],
    ['client requests failed (no answer, 5xx, timeout)', facts.failedAttempts],
    ['admission retries (same turn_id)', counters.admissionRetries],
    ['deliberate double sends', counters.doubleSends],
    ['admissions never acknowledged', counters.unacknowledged],
    ['other requests given up after retries', counters.httpErrors],
    ['worker SIGKILLs (holding a lease)', `${chaos.workerKills} (${chaos.workerKillsMidTurn})`],
    ['worker SIGSTOPs past the lease', chaos.workerStops],
    [
      options.engine === 'pglite'
        ? 'parley serve SIGKILLs (PGlite) / skipped, overdue after slow restarts'
        : 'API SIGKILLs',
      options.engine === 'pglite' ? `${chaos.apiKills} / ${chaos.skipped}` : chaos.apiKills,
    ],
    [`PostgreSQL restarts (${options.postgresRestartMode})`, chaos.postgresRestarts],
    ['leases lost by a worker (token gate)', facts.leasesLost],
    [
      'approvals asked / approved / rejected / stale',
      `${counters.approvalsRequested} / ${counters.approved} / ${counters.rejected} / ${counters.staleAnswers}`,
    ],
    [
      'approvals left unanswered / ended by their deadline',
      `${counters.approvalsLeft} / ${check.timedOut}`,
    ],
    [
      "calls of a client's own tool / left to their deadline",
      `${counters.clientToolCalls} / ${counters.clientToolsLeft}`,
    ],
    [
      'questions asked / answered / declined / left to their deadline',
      `${counters.questionsAsked} / ${counters.questionsAnswered} / ${counters.questionsDeclined} / ${counters.questionsLeft}`,
    ],
    ['tool results', check.totals.toolResults],
    ['budget extensions answered', check.budgetExtensions],
    ['turns out of steps finished (on_exhausted: finish)', check.stepsStopped],
    [
      'external effects / in doubt (interrupted) / idempotent re-runs',
      check.effects
        ? `${check.effects.performed} / ${check.effects.interrupted} / ${check.effects.rerun}`
        : '-',
    ],
    ['cancels sent / cancelled / too late', `${counters.cancelsSent} / ${cancelled} / ${tooLate}`],
    ['stream reconnects', counters.streamReconnects],
    [
      'OpenAI streamed responses / streams resumed (starting_after)',
      `${counters.openaiResponses} / ${counters.openaiResumes}`,
    ],
    [
      'Chat Completions / sent again (same Idempotency-Key)',
      `${counters.chatCompletions} / ${counters.chatRetries}`,
    ],
    [
      'AG-UI runs / sent again (same runId) / approvals answered by resume',
      `${counters.aguiRuns} / ${counters.aguiRetries} / ${counters.aguiResumes}`,
    ],
    [
      'AG-UI states taken (run 200) / sent again on session_busy / model changes committed',
      `${counters.aguiStates} / ${counters.aguiBusy} / ${check.stateChanges}`,
    ],
    [
      'AG-UI thread streams / reconnects (Last-Event-ID) / events checked',
      `${counters.aguiThreads} / ${counters.aguiThreadReconnects} / ${check.aguiThreads.events}`,
    ],
    [
      'A2A streamed tasks / followed again (SubscribeToTask) / sent with a push config',
      `${counters.a2aTasks} / ${counters.a2aResubscribes} / ${counters.a2aPushTasks}`,
    ],
    [
      'MCP tool calls / made again (same key, new MCP session)',
      `${counters.mcpCalls} / ${counters.mcpRetries}`,
    ],
    [
      'images uploaded / sent again (same Idempotency-Key: retries, on purpose)',
      `${counters.mediaUploads} / ${counters.mediaUploadRetries}, ${counters.mediaUploadRepeats}`,
    ],
    ['attachments / photos stored for them', `${check.media.attachments} / ${check.media.photos}`],
    [
      'images generated by turns (done) / generated photos stored',
      `${counters.imagesGenerated} / ${check.media.generated}`,
    ],
    [
      'replies read aloud / speech requests answered / retried / speech rows kept',
      `${check.media.spoken} / ${counters.speechRequests} / ${counters.speechRetries} / ${check.media.speechRows}`,
    ],
    ['media rounds given up', counters.mediaGivenUp],
    ['rounds left to the drain (follow timeouts)', counters.followTimeouts],
    ['sessions unparked (clients / drain)', `${counters.unparks} / ${drain.unparked}`],
    ['requests approved by the drain', drain.answered],
    ...missionRows(facts),
    ['unexpected process exits', facts.unexpectedExits.length],
    ['unclean shutdowns', facts.uncleanShutdowns.length],
    ['clients still running after the chaos (hung)', facts.hungClients.length],
    ['**lost**', check.findings.count('lost')],
    ['**doubled**', check.findings.count('doubled')],
    [
      '**gaps** (missing sequences)',
      `${check.findings.count('gap')} (${check.findings.missingSequences})`,
    ],
    ['**unfinished**', check.findings.count('unfinished')],
    ['**out of order**', check.findings.count('order')],
    ['**mismatches**', check.findings.count('mismatch')],
    [
      'chaos / drain / whole run',
      `${seconds(facts.chaosMs)} / ${seconds(drain.durationMs)} / ${seconds(facts.totalMs)}`,
    ],
  ];
  return [
    '| figure | value |',
    '| --- | --- |',
    ...rows.map(([name, value]) => `| ${name} | ${value} |`),
  ].join('\n');
}

function missionRows(facts: RunFacts): [string, string | number][] {
  if (!facts.missions) return [];
  const { ledger, drain } = facts.missions;
  const counters = ledger.counters;
  const kinds = new Map<string, number>();
  for (const execution of ledger.executions.values()) {
    kinds.set(execution.kind, (kinds.get(execution.kind) ?? 0) + 1);
  }
  const results = (kind: string) =>
    ['cancelled', 'unblocked', 'duplicate', 'too_late']
      .map(
        (result) =>
          `${result} ${ledger.commands.filter((command) => command.kind === kind && command.result === result).length}`,
      )
      .join(', ');
  return [
    ['executions dispatched (202)', ledger.executions.size],
    ['… by kind', [...kinds].map(([kind, count]) => `${kind} ${count}`).join(', ')],
    [
      'dispatch retries / double sends / never acknowledged',
      `${counters.dispatchRetries} / ${counters.doubleDispatches} / ${counters.unacknowledged}`,
    ],
    ['executions in the database (with threads and schedules)', facts.check.totals.executions],
    [
      'schedule fires recorded (started / queued / skipped)',
      `${facts.check.totals.scheduleFires} (${Object.values(facts.check.totals.fireOutcomes).join(' / ')})`,
    ],
    ['execution cancels sent', `${counters.cancelsSent}: ${results('cancel')}`],
    [
      'unblocks sent (by the drain)',
      `${counters.unblocksSent} (${drain.unblocked}): ${results('unblock')}, not blocked ${counters.notBlocked}`,
    ],
    ['executions still open after the drain', drain.open],
    ...webhookRows(facts),
    ...platformRows(facts),
  ];
}

function webhookRows(facts: RunFacts): [string, string | number][] {
  const figures = facts.check.webhooks;
  if (!figures) return [];
  return [
    ['webhook deliveries / POSTs received', `${figures.deliveries} / ${figures.receipts}`],
    [
      'webhook redeliveries accepted (after a later event)',
      `${figures.duplicates} (${figures.lateDuplicates})`,
    ],
    ...pushRows(facts),
    ...userStreamRows(facts),
  ];
}

function userStreamRows(facts: RunFacts): [string, string | number][] {
  const figures = facts.check.userStream;
  if (!figures) return [];
  return [
    [
      'user stream events owed / received / connections',
      `${figures.owed} / ${figures.received} / ${figures.connections}`,
    ],
  ];
}

function pushRows(facts: RunFacts): [string, string | number][] {
  const figures = facts.check.pushes;
  if (!figures) return [];
  return [
    [
      'A2A push configs / notifications / POSTs received (redeliveries accepted)',
      `${figures.configs} / ${figures.deliveries} / ${figures.receipts} (${figures.duplicates})`,
    ],
  ];
}

function platformRows(facts: RunFacts): [string, string | number][] {
  return facts.check.platforms.flatMap((figures): [string, string | number][] => {
    const name = `${figures.platform.charAt(0).toUpperCase()}${figures.platform.slice(1)}`;
    return [
      [`${name} messages sent (acknowledged)`, `${figures.updates} (${figures.acknowledged})`],
      figures.idempotencyKey
        ? [
            `${name} replies posted twice (posts keyed by ${figures.idempotencyKey}: each one doubled)`,
            figures.duplicates,
          ]
        : [
            `${name} replies posted twice, longest window (no idempotency key: measured)`,
            `${figures.duplicates} (${figures.longestWindowMs} ms)`,
          ],
    ];
  });
}

function byKind(ledger: Ledger): string {
  const counts = new Map<string, number>();
  for (const turn of ledger.turns.values()) counts.set(turn.kind, (counts.get(turn.kind) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ');
}

/** Violations grouped by rule, a few examples each: enough to start a post-mortem. */
export function describeViolations(violations: Violation[], examples = 5): string {
  const byCheck = new Map<string, Violation[]>();
  for (const violation of violations) {
    const key = `${violation.category}: ${violation.check}`;
    let list = byCheck.get(key);
    if (!list) byCheck.set(key, (list = []));
    list.push(violation);
  }
  const lines: string[] = [];
  for (const category of categories) {
    for (const [key, list] of byCheck) {
      if (!key.startsWith(`${category}:`)) continue;
      lines.push(`${key} (${list.length})`);
      for (const violation of list.slice(0, examples)) lines.push(`  - ${violation.detail}`);
      if (list.length > examples) lines.push(`  - … ${list.length - examples} more`);
    }
  }
  return lines.join('\n');
}

/** Any finding, a process that died on its own or did not stop cleanly fails the run. */
export function failed(facts: RunFacts): boolean {
  return (
    facts.check.findings.violations.length > 0 ||
    facts.unexpectedExits.length > 0 ||
    facts.uncleanShutdowns.length > 0 ||
    facts.hungClients.length > 0 ||
    facts.drain.open !== 0 ||
    (facts.missions?.drain.open ?? 0) !== 0
  );
}
