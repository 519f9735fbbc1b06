import { follow, type SessionView } from './follow.js';
import { sleep, type Apis, type StreamEvent } from './http.js';
import type { Ledger, TurnKind } from './ledger.js';
import type { Random } from './random.js';
import { answerTo, lookupOutput } from './messages.js';

/** What a round needs of its session's loop. */
export interface RoundHost {
  readonly ledger: Ledger;
  readonly apis: Apis;
  readonly sessionView: SessionView;
  readonly rng: Random;
  readonly followTimeoutMs: number;
  /** Admits one turn of `kind` (retried unchanged); its turn_id once acknowledged. */
  admit(kind: TurnKind): Promise<string | null>;
  /** A POST retried until answered below 500; null when it never was. */
  post(path: string, body: unknown): Promise<{ status: number; body: any } | null>;
}

type CancelMoment = 'at_once' | 'on_start' | 'on_text' | 'later';

/** One round: its turns, what it will do on the way, and the requests it has in flight. */
export class Round {
  private readonly admitted = new Set<string>();
  private inflight = 0;
  private readonly tasks: Promise<void>[] = [];
  private cancelSent = false;
  private superseded = false;
  private readonly cancelAt: CancelMoment;

  constructor(
    private readonly loop: RoundHost,
    private readonly kind: TurnKind,
    private readonly size: number,
  ) {
    this.cancelAt = loop.rng.weighted<CancelMoment>({
      at_once: 2,
      on_start: 3,
      on_text: 3,
      later: 2,
    });
  }

  async run(): Promise<void> {
    const first = await this.admit(this.kind);
    if (first === null) return;
    if (this.kind === 'burst') {
      for (let index = 1; index < this.size; index++) {
        await sleep(this.loop.rng.int(0, 400));
        await this.admit('burst');
      }
    }
    if (this.kind === 'cancel') {
      if (this.cancelAt === 'at_once') this.cancel(first);
      if (this.cancelAt === 'later') {
        const delay = this.loop.rng.int(0, 2_500);
        this.tasks.push(sleep(delay).then(() => this.cancel(first)));
      }
    }
    const view = this.loop.sessionView;
    if (view.sessionId === null) return;
    const followed = await follow(
      view,
      view.sessionId,
      this.loop.apis,
      this.loop.ledger,
      this.loop.rng,
      {
        onEvent: (event) => this.onEvent(event, first),
        settled: () =>
          this.inflight === 0 && [...this.admitted].every((turnId) => view.ended.has(turnId)),
        deadline: Date.now() + this.loop.followTimeoutMs,
      },
    );
    if (!followed) this.loop.ledger.counters.followTimeouts += 1;
    // A task may start another (a delayed cancel): wait until none is left.
    while (this.tasks.length > 0) await Promise.all(this.tasks.splice(0));
  }

  private async admit(kind: TurnKind): Promise<string | null> {
    this.inflight += 1;
    try {
      const turnId = await this.loop.admit(kind);
      if (turnId !== null) this.admitted.add(turnId);
      return turnId;
    } finally {
      this.inflight -= 1;
    }
  }

  private onEvent(event: StreamEvent, first: string): void {
    const mine = event.turn_id === first;
    if (this.kind === 'cancel' && mine) {
      if (this.cancelAt === 'on_start' && event.type === 'turn_started') this.cancel(first);
      if (this.cancelAt === 'on_text' && event.type === 'text_delta') this.cancel(first);
    }
    if (event.type === 'input_required') this.tasks.push(this.onInputRequired(event));
    if (event.type === 'error' && event.code === 'session_parked') this.tasks.push(this.unpark());
  }

  /** A person answers; or, in a supersede round, writes again instead (and maybe also answers). */
  private async onInputRequired(event: StreamEvent): Promise<void> {
    if (event.kind === 'client_tool') return this.runClientTool(event);
    if (event.kind === 'question') return this.answerQuestion(event);
    const { ledger, rng } = this.loop;
    ledger.counters.approvalsRequested += 1;
    await sleep(rng.int(0, 300));
    if (this.kind === 'supersede' && !this.superseded) {
      this.superseded = true; // one superseding message per round
      await this.admit('follow_up');
      if (!rng.chance(0.5)) return;
    }
    if (this.kind !== 'supersede' && rng.chance(0.15)) {
      // Nobody answers: the request's deadline ends it (rejected, as the safe default).
      ledger.counters.approvalsLeft += 1;
      return;
    }
    const approved = this.kind === 'supersede' || rng.chance(0.75);
    if (await this.answer(event, approved, { reason: 'soak' })) {
      if (approved) ledger.counters.approved += 1;
      else ledger.counters.rejected += 1;
    }
  }

  /** The client runs its own tool and sends the output (or, now and then, says it could not). */
  private async runClientTool(event: StreamEvent): Promise<void> {
    const { ledger, rng } = this.loop;
    ledger.counters.clientToolCalls += 1;
    await sleep(rng.int(0, 300));
    if (rng.chance(0.1)) {
      // The client never comes back: the call fails at its deadline.
      ledger.counters.clientToolsLeft += 1;
      return;
    }
    const approved = rng.chance(0.9);
    const output = lookupOutput(event.arguments);
    await this.answer(event, approved, approved ? { output } : { reason: 'soak' }, output);
  }

  /** A person answers the agent's question (`ask_user`), declines it, or walks away. */
  private async answerQuestion(event: StreamEvent): Promise<void> {
    const { ledger, rng } = this.loop;
    ledger.counters.questionsAsked += 1;
    await sleep(rng.int(0, 300));
    const choice = rng.weighted({ answer: 7, decline: 1, leave: 2 });
    if (choice === 'leave') {
      // Nobody answers: `question_timeout_ms` ends it and the model is told so.
      ledger.counters.questionsLeft += 1;
      return;
    }
    const text = answerTo(event.prompt);
    const taken =
      choice === 'answer'
        ? await this.answer(event, true, { answer: text }, undefined, text)
        : await this.answer(event, false, { reason: 'soak' });
    if (taken && choice === 'answer') ledger.counters.questionsAnswered += 1;
    if (taken && choice === 'decline') ledger.counters.questionsDeclined += 1;
  }

  /**
   * Sends an answer (PROTOCOL.md §4) and records what the server said of it: true when it
   * was taken (200; a client tool's `output`, a question's `text`, then must be its call's
   * result).
   */
  private async answer(
    event: StreamEvent,
    approved: boolean,
    response: Record<string, unknown>,
    output?: string,
    text?: string,
  ): Promise<boolean> {
    const { ledger } = this.loop;
    const view = this.loop.sessionView;
    const answer = await this.loop.post(
      `/api/v1/chat/sessions/${view.sessionId}/inputs/${event.request_id}`,
      { expected_sequence: event.sequence, approved, response },
    );
    if (!answer) return false;
    if (answer.status === 200) {
      ledger.answers.push({
        sessionId: view.sessionId as string,
        requestId: String(event.request_id),
        approved,
        ...(approved && output !== undefined ? { output } : {}),
        ...(approved && text !== undefined ? { answer: text } : {}),
      });
      return true;
    }
    if (answer.status === 409 && answer.body?.error === 'stale_input') {
      ledger.counters.staleAnswers += 1;
    } else {
      ledger.violation(
        'answer',
        `request ${event.request_id}: ${answer.status} ${JSON.stringify(answer.body)}`,
      );
    }
    return false;
  }

  private cancel(turnId: string): void {
    if (this.cancelSent) return;
    this.cancelSent = true;
    this.tasks.push(this.sendCancel(turnId));
  }

  private async sendCancel(turnId: string): Promise<void> {
    const { ledger, rng } = this.loop;
    const sessionId = this.loop.sessionView.sessionId as string;
    const commandId = `cancel_${turnId}`;
    const path = `/api/v1/chat/sessions/${sessionId}/turns/${turnId}/cancel`;
    ledger.counters.cancelsSent += 1;
    const answer = await this.loop.post(path, { command_id: commandId });
    if (!answer) return;
    if (answer.status !== 200) {
      ledger.violation('cancel', `turn ${turnId}: ${answer.status} ${JSON.stringify(answer.body)}`);
      return;
    }
    const first = answer.body as { result: 'cancelled' | 'duplicate' | 'too_late'; state: string };
    ledger.cancels.push({ sessionId, turnId, commandId, result: first.result, state: first.state });
    if (rng.chance(0.3)) {
      // The same command again: idempotent, it must repeat the first outcome's state.
      const again = await this.loop.post(path, { command_id: commandId });
      if (
        again &&
        (again.status !== 200 ||
          again.body?.result !== 'duplicate' ||
          again.body?.state !== first.state)
      ) {
        ledger.violation(
          'cancel idempotency',
          `turn ${turnId}: first ${first.result}/${first.state}, again ${again.status} ${JSON.stringify(again.body)}`,
        );
      }
    }
  }

  /** The operator's `parley sessions unpark`: a parked session's later turns must still run. */
  private async unpark(): Promise<void> {
    const answer = await this.loop.post(
      `/api/v1/admin/sessions/${this.loop.sessionView.sessionId}/unpark`,
      {},
    );
    if (answer?.status === 200) this.loop.ledger.counters.unparks += 1;
  }
}
