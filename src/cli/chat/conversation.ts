import {
  newClientKey,
  type ParleyClient,
  type ParleyEvent,
  type SessionProjection,
  type StateChange,
  type Subscription,
} from '../../client/index.js';
import { describeError } from './errors.js';
import {
  answerInput,
  askInput,
  fromEvent,
  fromPendingInput,
  type InputContext,
  type InputRequest,
} from './inputs.js';
import type { Screen } from './screen.js';

/**
 * One session as this terminal sees it: one stream open for the whole chat (so other
 * participants' posts show too), the turns this terminal admitted, the replies streaming
 * in, what the connection is doing, and cancelling with the cancel command.
 */
export class Conversation implements InputContext {
  sessionId = '';
  input: InputRequest | null = null;
  private subscription: Subscription | null = null;
  /** Turns this terminal admitted that no done, cancelled or error has named yet. */
  private readonly pending = new Set<string>();
  private currentTurn: string | null = null;
  private cancelRequested = false;
  private everOpen = false;

  constructor(
    readonly client: ParleyClient,
    readonly url: string,
    readonly screen: Screen,
  ) {}

  async open(projection: SessionProjection): Promise<void> {
    this.sessionId = projection.session_id;
    this.screen.status(
      `session ${projection.session_id}, agent ${projection.agent}; Ctrl-C to quit`,
    );
    const transcript = await this.client.listMessages(this.sessionId, { limit: 20 });
    for (const message of [...transcript.items].reverse()) {
      this.screen.print(`${label(message.role, message.author)}: ${message.content}`);
    }
    if (projection.current_turn) this.currentTurn = projection.current_turn.turn_id;
    // A pending question is answered from its own event: replay from just before it.
    const pendingInput = projection.pending_input;
    const after = pendingInput
      ? Math.min(projection.latest_sequence, Math.max(0, pendingInput.expected_sequence - 1))
      : projection.latest_sequence;
    this.subscription = this.client.subscribe(this.sessionId, {
      after,
      stopOnTerminal: false,
      onEvent: (event) => this.onEvent(event),
      onResync: (next) => this.onResync(next),
      onState: (change) => this.onState(change),
      onTyping: () => this.onTyping(),
    });
    if (this.screen.mode === 'starting') this.becomeIdleIfDone();
  }

  close(): void {
    this.subscription?.close();
  }

  async send(text: string): Promise<void> {
    const turnId = newClientKey('turn');
    // Before the request: our own message may stream back before the 202 does.
    this.pending.add(turnId);
    this.screen.mode = 'turn';
    this.screen.armWaitingNotice();
    try {
      const admission = await this.client.admitTurn({
        sessionId: this.sessionId,
        message: text,
        turnId,
      });
      if (admission.state === 'stored') {
        this.pending.delete(turnId);
        this.screen.status('posted; your role does not start a reply from the agent');
        this.becomeIdleIfDone();
      }
    } catch (error) {
      this.pending.delete(turnId);
      this.screen.status(`not sent: ${describeError(error, this.url)}`);
      this.becomeIdleIfDone();
    }
  }

  /** The line typed answers the pending input request. */
  answer(line: string): Promise<void> {
    return answerInput(this, line);
  }

  /**
   * Ctrl-C during a turn: ask the server to cancel it. False when there is nothing to
   * cancel, or a cancel was asked for already (the second Ctrl-C quits).
   */
  cancel(): boolean {
    const target = this.currentTurn ?? [...this.pending].at(-1) ?? null;
    if (this.cancelRequested || target === null) return false;
    this.cancelRequested = true;
    this.screen.status('cancelling the turn (Ctrl-C again to quit)');
    this.client.cancelTurn(this.sessionId, target).then(
      (result) => this.screen.status(`cancel: ${result.result} (turn ${result.state})`),
      (error: unknown) => this.screen.status(`could not cancel: ${describeError(error, this.url)}`),
    );
    return true;
  }

  /** Back to the `you>` prompt, unless a turn is still running or a question is open. */
  becomeIdleIfDone(): void {
    if (this.screen.finished || this.screen.mode === 'input') return;
    if (this.pending.size > 0 || this.currentTurn !== null) {
      this.screen.mode = 'turn';
      return;
    }
    this.screen.showIdlePrompt();
  }

  private onEvent(event: ParleyEvent): void {
    const { screen } = this;
    switch (event.type) {
      case 'message': {
        const { message } = event;
        // Our own posts are on screen already, as typed.
        if (message.role === 'user' && event.turn_id && this.pending.has(event.turn_id)) return;
        screen.endReplyLine();
        screen.print(`${label(message.role, message.author)}: ${message.content}`);
        return;
      }
      case 'turn_started':
        screen.clearWaitingNotice();
        this.currentTurn = event.turn_id;
        screen.enterTurn();
        if (event.attempt > 1)
          screen.status(`the assistant is retrying (attempt ${event.attempt})`);
        return;
      case 'text_delta':
        screen.clearWaitingNotice();
        screen.enterTurn();
        screen.appendReply(event.delta);
        return;
      case 'attempt_reset':
        if (screen.replyText !== '') {
          screen.status(
            'the reply was interrupted on the server and starts over: disregard the text above',
          );
        }
        screen.replyText = '';
        screen.replyShown = false;
        return;
      case 'tool_call':
        screen.status(`tool call: ${event.tool} ${JSON.stringify(event.arguments)}`);
        return;
      case 'tool_result':
        screen.status(`tool ${event.tool}: ${event.ok ? 'done' : 'failed'}`);
        return;
      case 'input_required':
        screen.clearWaitingNotice();
        askInput(this, fromEvent(event));
        return;
      case 'input_resolved':
        if (this.input?.requestId === event.request_id) this.input = null;
        if (screen.mode === 'input') screen.mode = 'turn';
        screen.status(
          event.actor === null
            ? `request expired (${event.expired ?? 'no longer pending'}): nothing ran`
            : event.state === 'timeout'
              ? `nobody answered in time: ${event.approved ? 'approved' : 'rejected'} by default`
              : `${event.approved ? 'approved' : 'rejected'} by ${event.actor.user}`,
        );
        return;
      case 'input_escalated':
        screen.status(`the request is escalated to ${event.to} (step ${event.step})`);
        return;
      case 'input_reminder':
        screen.status(`reminder: the request's default applies at ${event.deadline_at}`);
        return;
      case 'usage':
        return;
      case 'stalled':
        screen.status(
          `the ${event.what === 'tool' ? `tool ${event.tool ?? ''}` : 'reply'} stalled` +
            (event.action === 'retry' ? '; trying again' : '; the turn ends'),
        );
        return;
      case 'done':
        if (screen.replyText === '') {
          screen.print(`assistant: ${event.final_message.content}`);
        }
        this.endTurns(event.turn_ids);
        return;
      case 'cancelled':
        screen.status('the turn was cancelled');
        this.endTurns(event.turn_ids);
        return;
      case 'error':
        screen.status(`the turn failed: ${event.message} (${event.code})`);
        this.endTurns(event.turn_ids);
        return;
    }
  }

  private endTurns(turnIds: string[]): void {
    this.screen.endReplyLine();
    for (const turnId of turnIds) this.pending.delete(turnId);
    this.currentTurn = null;
    this.cancelRequested = false;
    this.screen.typingShown = false;
    if (this.input && this.screen.mode !== 'input') this.input = null;
    this.becomeIdleIfDone();
  }

  private async onResync(projection: SessionProjection): Promise<void> {
    const before = this.subscription?.cursor ?? 0;
    this.screen.endReplyLine();
    this.screen.status(
      `resynced: history up to sequence ${projection.latest_sequence} is no longer streamable; continuing from there`,
    );
    // Nothing in the missing range may be assumed: show what the transcript says happened.
    try {
      const missed = await this.client.listMessages(this.sessionId, { limit: 20 });
      for (const message of [...missed.items].reverse()) {
        if (message.sequence > before) {
          this.screen.print(`${label(message.role, message.author)}: ${message.content}`);
        }
      }
    } catch (error) {
      this.screen.status(`could not load the missed messages: ${describeError(error, this.url)}`);
    }
    this.currentTurn = projection.current_turn?.turn_id ?? null;
    if (!projection.current_turn && projection.state !== 'queued') this.pending.clear();
    const pendingInput = projection.pending_input;
    if (pendingInput) {
      askInput(this, fromPendingInput(pendingInput));
    } else {
      this.becomeIdleIfDone();
    }
  }

  private onState(change: StateChange): void {
    switch (change.state) {
      case 'connecting':
        this.screen.status(`connecting to ${this.url}...`);
        return;
      case 'open':
        this.screen.status(this.everOpen ? 'reconnected' : 'connected');
        this.everOpen = true;
        return;
      case 'reconnecting': {
        const attempt = change.attempt ?? 1;
        const why = change.error?.message ?? 'unknown';
        const wait = `${((change.delayMs ?? 0) / 1000).toFixed(1)} s`;
        this.screen.status(
          attempt === 1
            ? `connection lost (${why}); reconnecting in ${wait}`
            : `still no connection (${why}); reconnecting in ${wait} (attempt ${attempt})`,
        );
        return;
      }
      case 'closed':
        if (change.reason === 'fatal' || change.reason === 'handler_error') {
          this.screen.status(`the stream stopped: ${change.error?.message ?? change.reason}`);
        }
        return;
    }
  }

  private onTyping(): void {
    const { screen } = this;
    if (screen.typingShown || screen.replyText !== '' || screen.mode === 'input') return;
    screen.clearWaitingNotice();
    screen.typingShown = true;
    screen.status('assistant is writing...');
  }
}

function label(role: string, author: string): string {
  return role === 'user' ? author : role;
}
