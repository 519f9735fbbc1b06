import { devPrincipal } from '../../../src/config/types.js';
import type { UserStreamRecord } from '../userStream.js';
import { checkUserStream, readFeedEvents, type UserStreamFigures } from './userStream.js';
import { checkPushes, readPushes, type PushEvidence, type PushFigures } from './a2aPush.js';
import type { Db } from '../../../src/store/db.js';
import type { EffectLedger } from '../effects.js';
import { Ledger } from '../ledger.js';
import { MissionLedger } from '../missionLedger.js';
import { checkAcknowledged, checkAtRest } from './acknowledged.js';
import { checkAguiThreads, type ThreadFigures } from './aguiThreads.js';
import { checkBudgets, checkStepBudgets } from './budgets.js';
import { checkEffects, type EffectTotals } from './effects.js';
import { Findings, Journal } from './findings.js';
import { checkGapless, checkOrder, checkTerminals } from './journal.js';
import { checkMedia, readMedia, type MediaFigures } from './media.js';
import { checkExecutions, checkSchedules } from './missions.js';
import { readMissionSnapshot } from './missionSnapshot.js';
import { checkPlatform, type PlatformEvidence, type PlatformFigures } from './platforms.js';
import { checkPostedOnce, type PlatformTraffic } from './postedOnce.js';
import { checkQuestions } from './questions.js';
import { readSnapshot } from './snapshot.js';
import { checkState } from './state.js';
import {
  checkWebhooks,
  readDeliveries,
  type WebhookEvidence,
  type WebhookFigures,
} from './webhooks.js';
import { checkTools, checkPromises } from './tools.js';
import { checkReplies, checkTranscript } from './transcript.js';

export { categories, type Category, type Violation } from './findings.js';

/** One platform's figures, with its name and the idempotency key of its posts (if any). */
export interface PlatformReport extends PlatformFigures {
  platform: string;
  idempotencyKey: string | null;
}

export interface CheckResult {
  findings: Findings;
  /** The webhook endpoint's figures, when one was checked. */
  webhooks: WebhookFigures | null;
  /** The A2A push notifications' figures, when they were checked. */
  pushes: PushFigures | null;
  /** The user stream's figures, when it was followed. */
  userStream: UserStreamFigures | null;
  /** The first chat platform's figures, when one was checked. */
  platform: PlatformFigures | null;
  /** Every chat platform's figures, in the order given. */
  platforms: PlatformReport[];
  /** What the snapshot held, for the figures. */
  totals: {
    sessions: number;
    turns: number;
    events: number;
    toolResults: number;
    executions: number;
    scheduleFires: number;
    /** Fires by outcome: `started`, `queued`, `skipped`. */
    fireOutcomes: Record<string, number>;
  };
  /** What the effect tools did, when their ledger was given. */
  effects: EffectTotals | null;
  /** Budget extension requests answered (by clients or the drain). */
  budgetExtensions: number;
  /** Turns of the `steps` agent that ran out of steps and finished as they should. */
  stepsStopped: number;
  /** The media client's uploads, photos and speech as the database holds them. */
  media: MediaFigures;
  /** Approvals ended by their deadline (the timer, with the safe default). */
  timedOut: number;
  /** Sessions followed through the AG-UI thread stream, and the events compared. */
  aguiThreads: ThreadFigures;
  /** Turns whose model's state change was committed with them (`update_state`). */
  stateChanges: number;
}

/**
 * The soak's checker: reads the whole database in one snapshot and holds it to the
 * journal invariants (RUNTIME.md, PROTOCOL.md) and to what the clients were told
 * (`ledger`). `stoppedPids`: the processes stopped with SIGTERM, whose leases must all
 * have been released; `effects`: the external ledger of the effect tools' side effects.
 * `missions`: what the mission clients were told. `webhooks`: an endpoint and what its
 * receiver got; `pushes`, what the A2A push receiver got. `platform`, `platforms`: the updates each fake platform sent, and its posts.
 * `questionTimeoutMs`: the agents' `question_timeout_ms`, which bounds each question's deadline.
 */
export async function checkDatabase(
  db: Db,
  ledger: Ledger = new Ledger(),
  options: {
    stoppedPids?: Set<number>;
    effects?: EffectLedger;
    missions?: MissionLedger;
    webhooks?: WebhookEvidence;
    /** What the A2A push receiver got (the tasks sent with a config are the ledger's). */
    pushes?: PushEvidence;
    /** What the dev principal's user stream delivered. */
    userStream?: UserStreamRecord;
    platform?: PlatformEvidence;
    platforms?: PlatformTraffic[];
    /** The agent's `question_timeout_ms`: no question's deadline may be later. */
    questionTimeoutMs?: number;
  } = {},
): Promise<CheckResult> {
  const snapshot = await readSnapshot(db);
  const missionSnapshot = await readMissionSnapshot(db);
  const missions = options.missions ?? new MissionLedger();
  const journal = new Journal(snapshot);
  const findings = new Findings();
  checkGapless(journal, findings);
  checkTerminals(journal, findings);
  checkOrder(journal, findings);
  checkTranscript(journal, findings);
  checkTools(journal, findings);
  checkAcknowledged(journal, ledger, findings);
  checkPromises(journal, ledger, findings);
  checkQuestions(journal, ledger, findings, options.questionTimeoutMs ?? null);
  const aguiThreads = checkAguiThreads(journal, ledger, findings);
  const stateChanges = checkState(journal, ledger, findings);
  checkReplies(journal, ledger, findings);
  const media = checkMedia(journal, await readMedia(db, ledger), ledger, findings);
  if (options.stoppedPids) checkAtRest(journal, options.stoppedPids, findings);
  const budgetExtensions = checkBudgets(journal, findings);
  const stepsStopped = checkStepBudgets(journal, ledger, findings);
  const effects = options.effects ? checkEffects(journal, options.effects, findings) : null;
  checkExecutions(journal, missionSnapshot, missions, findings);
  checkSchedules(missionSnapshot, findings);
  const webhooks = options.webhooks
    ? checkWebhooks(
        journal,
        await readDeliveries(db, options.webhooks.webhook),
        options.webhooks,
        findings,
      )
    : null;
  const pushes = options.pushes
    ? checkPushes(ledger.pushes, await readPushes(db), options.pushes, findings)
    : null;
  const userStream = options.userStream
    ? checkUserStream(
        await readFeedEvents(db, devPrincipal.tenant, options.userStream.fromMs),
        options.userStream,
        findings,
      )
    : null;
  const platforms = [
    ...(options.platform ? [options.platform as PlatformTraffic] : []),
    ...(options.platforms ?? []),
  ].map((evidence): PlatformReport => {
    const figures = checkPlatform(journal, evidence, findings);
    checkPostedOnce(evidence, findings);
    return {
      ...figures,
      platform: evidence.platform,
      idempotencyKey: evidence.idempotencyKey ?? null,
    };
  });
  for (const violation of [...ledger.violations, ...missions.violations]) {
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
    webhooks,
    pushes,
    userStream,
    platform: platforms[0] ?? null,
    platforms,
    totals: {
      sessions: snapshot.sessions.length,
      turns: snapshot.turns.length,
      events: snapshot.events.length,
      toolResults: snapshot.events.filter((event) => event.type === 'tool_result').length,
      executions: missionSnapshot.executions.length,
      scheduleFires: missionSnapshot.fires.length,
      fireOutcomes: Object.fromEntries(
        ['started', 'queued', 'skipped'].map((outcome) => [
          outcome,
          missionSnapshot.fires.filter((fire) => fire.outcome === outcome).length,
        ]),
      ),
    },
    effects,
    budgetExtensions,
    stepsStopped,
    media,
    timedOut: journal.snapshot.requests.filter((request) => request.state === 'timeout').length,
    aguiThreads,
    stateChanges,
  };
}
