import { followThread } from './aguiThread.js';
import type { SessionView } from './follow.js';
import { sendOnce, type Apis } from './http.js';
import type { Ledger, TurnKind } from './ledger.js';
import { messageFor, roundWeights, soakClientTool } from './messages.js';
import type { Pacer } from './pacer.js';
import type { Random } from './random.js';
import { Round, type RoundHost } from './round.js';

export interface LoopContext {
  apis: Apis;
  ledger: Ledger;
  pacer: Pacer;
  /** How long a round follows its turns before leaving them to the drain. */
  followTimeoutMs: number;
  /** Whether the session is also followed through the AG-UI thread stream. */
  followThread?: boolean;
  /** The session's agent (else the default) and the rounds its loop draws (else `roundWeights`). */
  agent?: string;
  weights?: Partial<Record<TurnKind, number>>;
}

/** How long a client keeps retrying one request (admission, cancel, answer). */
const retryWindowMs = 60_000;

/**
 * One client's loop over one session: rounds of a kind drawn from `roundWeights`, each
 * admitting its turns (retrying the same turn_id through failures), then following the
 * session until every turn it admitted has ended, acting as a person would on the way:
 * answering approvals, superseding one with a new message, cancelling.
 */
export class SessionLoop implements RoundHost {
  private readonly view: SessionView = { sessionId: null, cursor: 0, ended: new Map() };
  private counter = 0;
  private done = false;
  /** The AG-UI thread stream's follower, once the session exists (`followThread`). */
  private thread: Promise<void> | null = null;

  constructor(
    private readonly context: LoopContext,
    private readonly random: Random,
    /** Makes this loop's turn_ids unique in the run: `<prefix>_<n>`. */
    private readonly prefix: string,
  ) {}

  async run(): Promise<void> {
    for (;;) {
      let kind = this.random.weighted(
        (this.context.weights ?? roundWeights) as Record<TurnKind, number>,
      );
      const wanted = kind === 'burst' ? this.random.int(2, 3) : kind === 'supersede' ? 2 : 1;
      const granted = await this.context.pacer.take(wanted);
      if (granted === 0) break;
      if (kind === 'supersede' && granted < 2) kind = 'approval';
      await new Round(this, kind, granted).run();
    }
    this.done = true;
    await this.thread;
  }

  get ledger(): Ledger {
    return this.context.ledger;
  }

  get apis(): Apis {
    return this.context.apis;
  }

  get sessionView(): SessionView {
    return this.view;
  }

  get rng(): Random {
    return this.random;
  }

  get followTimeoutMs(): number {
    return this.context.followTimeoutMs;
  }

  nextTurnId(): string {
    this.counter += 1;
    return `${this.prefix}_${this.counter}`;
  }

  /** Admits one turn, retrying the same body; the turn_id once acknowledged, else null. */
  async admit(kind: TurnKind): Promise<string | null> {
    const { ledger, apis } = this.context;
    const turnId = this.nextTurnId();
    const message = messageFor(kind, turnId, this.random);
    const body: Record<string, unknown> = { turn_id: turnId, message };
    if (kind === 'client_tool') body.client_tools = [soakClientTool];
    if (this.view.sessionId) body.session_id = this.view.sessionId;
    else if (this.context.agent) body.agent = this.context.agent;
    ledger.counters.admissionAttempts += 1;
    const answer = await apis.send('POST', '/api/v1/chat/turns', body, {
      deadline: Date.now() + retryWindowMs,
      random: this.random,
      onRetry: () => (ledger.counters.admissionRetries += 1),
    });
    if (!answer) {
      ledger.counters.unacknowledged += 1;
      return null;
    }
    if (answer.status !== 202) {
      ledger.violation(
        'admission',
        `turn ${turnId}: ${answer.status} ${JSON.stringify(answer.body)}`,
      );
      return null;
    }
    this.acknowledge(turnId, kind, message, answer.body);
    if (this.random.chance(0.08)) {
      // A double-clicking user: the same request again, to the other API process.
      ledger.counters.doubleSends += 1;
      const again = await sendOnce(apis.pick(), 'POST', '/api/v1/chat/turns', body).catch(
        () => null,
      );
      if (again?.status === 202) this.acknowledge(turnId, kind, message, again.body);
      else if (again && again.status < 500) {
        ledger.violation(
          'admission',
          `turn ${turnId} sent again: ${again.status} ${JSON.stringify(again.body)}`,
        );
      }
    }
    return turnId;
  }

  private acknowledge(turnId: string, kind: TurnKind, message: string, body: any): void {
    const sessionId = String(body?.session_id);
    if (this.view.sessionId !== null && this.view.sessionId !== sessionId) {
      this.ledger.violation(
        'admission',
        `turn ${turnId} for session ${this.view.sessionId} was admitted into ${sessionId}`,
      );
    }
    if (this.view.sessionId === null && this.context.followThread) {
      this.thread = followThread(
        this.apis,
        this.ledger,
        this.random.fork('thread'),
        sessionId,
        () => this.done,
      );
    }
    this.view.sessionId ??= sessionId;
    this.ledger.acknowledge({ turnId, sessionId, kind, message, sequence: Number(body?.sequence) });
  }

  /** Sends a request until it is answered below 500; records anything unexpected. */
  async post(path: string, body: unknown): Promise<{ status: number; body: any } | null> {
    const answer = await this.context.apis.send('POST', path, body, {
      deadline: Date.now() + retryWindowMs,
      random: this.random,
    });
    if (!answer) this.context.ledger.counters.httpErrors += 1;
    return answer;
  }
}
