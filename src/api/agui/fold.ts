import { EventType, type Event as AgUiEvent, type Interrupt, type Message } from '@ag-ui/core';
import type { ParleyEvent } from '../../protocol/events.js';
import { interruptOf } from './interrupts.js';
import { jsonPatch } from './jsonPatch.js';
import { appendReasoning, appendText, closeMessage, type Emit, type Run } from './runText.js';

/**
 * A session's journal seen as AG-UI events (docs/protocols.md, "AG-UI"): a pure fold, so the
 * same journal always gives the same events, each tagged with the sequence of the journal
 * event it came from (the SSE `id`, so a reconnect resumes exactly).
 *
 * A run is a turn's stretch of work: it starts with the turn (`RUN_STARTED`, run id = the
 * turn id) and ends with the reply (`RUN_FINISHED`, outcome `success`), a cancel (outcome
 * `cancelled`), a failure (`RUN_ERROR`) or the requests the turn waits for (outcome
 * `interrupt`, one interrupt per request). A turn that goes on after its requests are
 * answered continues as a new run, `<turn id>.<sequence>` (the sequence of the event that
 * resumed it). One fold follows the whole thread (every turn, the server's own included)
 * or, for a POST, one run only under the client's run id.
 */

export interface AgUiFrame {
  /** The journal event this AG-UI event came from. */
  sequence: number;
  event: AgUiEvent;
}

export interface FoldScope {
  threadId: string;
  /** Fold one run only: the turn a request admitted or resumed, under the client's run id. */
  only?: { turnId: string; runId: string };
  /**
   * Show the model's reasoning text (`?include=reasoning`, as on Parley's own stream);
   * without it a run shows only that it reasons: `REASONING_START` and `REASONING_END`.
   */
  reasoning?: boolean;
}

export class AgUiFold {
  private run: Run | null = null;
  private readonly out: AgUiFrame[] = [];
  /** Requests of the open run not yet shown: the run ends with them once they are all in. */
  private pending: { sequence: number; interrupt: Interrupt | null }[] = [];
  /** Turns whose run ended with an interrupt: their next event opens a continuation run. */
  private readonly paused = new Set<string>();
  /** A state change between runs, shown when the next one starts. */
  private heldState: { sequence: number; data: Record<string, unknown> } | null = null;
  /** The state this fold last showed: later changes are shown as a patch of it. */
  private shownState: Record<string, unknown> | null = null;
  private finished = false;
  private readonly emitter: Emit = (sequence, event) => this.emit(sequence, event);

  constructor(private readonly scope: FoldScope) {
    if (scope.only) {
      // A POST answers at once: its run starts before the journal says anything.
      this.open(scope.only.turnId, 0);
    }
  }

  /**
   * A fold started mid-journal, for a reader that already has this state: changes after
   * it are shown as patches of it, as a fold from the start would show them.
   */
  assumeShown(state: Record<string, unknown> | null): void {
    this.shownState = state;
  }

  /** One run only, and it has ended: the POST's stream is complete. */
  get over(): boolean {
    return this.finished;
  }

  /** The run waits for requests still to be shown (more may come in the same commit). */
  get holding(): boolean {
    return this.pending.length > 0;
  }

  /** Where the open run started (null: none is open, nothing is held). */
  get openSince(): number | null {
    return this.run?.start ?? null;
  }

  apply(event: ParleyEvent): void {
    if (this.finished) return;
    if (this.pending.length > 0 && event.type !== 'input_required') this.release();
    const only = this.scope.only;
    switch (event.type) {
      case 'turn_started': {
        if (only) {
          if (!event.turn_ids.includes(only.turnId)) return;
          // Folded into a burst: its lead's events are the run's.
          if (this.run) this.run.turnId = event.turn_id;
        }
        const run = this.ensure(event.turn_id, event.sequence);
        if (event.attempt !== run.attempt) {
          this.withdraw(run, event.sequence, event.attempt);
          run.attempt = event.attempt;
        }
        return;
      }
      case 'text_delta': {
        if (!this.mine(event.turn_id) || event.delta === '') return;
        appendText(
          this.ensure(event.turn_id, event.sequence),
          event.sequence,
          event.delta,
          this.emitter,
        );
        return;
      }
      case 'reasoning_delta': {
        if (!this.mine(event.turn_id)) return;
        appendReasoning(
          this.ensure(event.turn_id, event.sequence),
          event.sequence,
          event.delta,
          this.scope.reasoning === true,
          this.emitter,
        );
        return;
      }
      case 'attempt_reset': {
        const run = this.run;
        if (run && run.turnId === event.turn_id) this.withdraw(run, event.sequence, event.attempt);
        return;
      }
      case 'tool_call': {
        if (!this.mine(event.turn_id)) return;
        const run = this.ensure(event.turn_id, event.sequence);
        closeMessage(run, event.sequence, this.emitter);
        const toolCallId = event.call_id;
        this.emit(event.sequence, {
          type: EventType.TOOL_CALL_START,
          toolCallId,
          toolCallName: event.tool,
          ...(run.lastMessageId ? { parentMessageId: run.lastMessageId } : {}),
        });
        this.emit(event.sequence, {
          type: EventType.TOOL_CALL_ARGS,
          toolCallId,
          delta: JSON.stringify(event.arguments ?? {}),
        });
        this.emit(event.sequence, { type: EventType.TOOL_CALL_END, toolCallId });
        return;
      }
      case 'tool_result': {
        if (!this.mine(event.turn_id)) return;
        const run = this.ensure(event.turn_id, event.sequence);
        closeMessage(run, event.sequence, this.emitter);
        this.emit(event.sequence, {
          type: EventType.TOOL_CALL_RESULT,
          messageId: `${event.call_id}.result`,
          toolCallId: event.call_id,
          role: 'tool',
          content: JSON.stringify(event.ok ? (event.result ?? null) : { error: event.error }),
        });
        return;
      }
      case 'input_required': {
        if (!this.mine(event.turn_id)) return;
        const run = this.ensure(event.turn_id, event.sequence);
        closeMessage(run, event.sequence, this.emitter);
        // A call of the client's own tool is no interrupt: the run ends, the client runs it
        // (its TOOL_CALL events are out) and sends the output as a tool message.
        const interrupt = event.kind === 'client_tool' ? null : interruptOf(event);
        this.pending.push({ sequence: event.sequence, interrupt });
        return;
      }
      case 'input_resolved': {
        const run = this.run;
        if (!run || run.turnId !== event.turn_id) return;
        this.emit(event.sequence, {
          type: EventType.CUSTOM,
          name: 'parley.input_resolved',
          value: {
            request_id: event.request_id,
            approved: event.approved,
            state: event.state ?? 'answered',
          },
        });
        return;
      }
      case 'done': {
        if (!this.ended(event.turn_ids)) return;
        const run = this.ensure(event.turn_id, event.sequence);
        const reply = event.final_message.content;
        // The reply as committed wins over what streamed (a short reply may come whole).
        if (reply.startsWith(run.text)) {
          if (reply.length > run.text.length) {
            appendText(run, event.sequence, reply.slice(run.text.length), this.emitter);
          }
        } else {
          this.withdraw(run, event.sequence, run.attempt);
          appendText(run, event.sequence, reply, this.emitter);
        }
        this.finish(run, event.sequence, {
          type: EventType.RUN_FINISHED,
          threadId: this.scope.threadId,
          runId: run.runId,
          outcome: { type: 'success' },
        });
        return;
      }
      case 'cancelled': {
        if (!this.ended(event.turn_ids)) return;
        const run = this.ensure(event.turn_id, event.sequence);
        this.finish(run, event.sequence, {
          type: EventType.RUN_FINISHED,
          threadId: this.scope.threadId,
          runId: run.runId,
          outcome: { type: 'cancelled' },
        });
        return;
      }
      case 'error': {
        if (!this.ended(event.turn_ids)) return;
        const lead = event.turn_id ?? event.turn_ids[0];
        if (lead === undefined) return;
        const run = this.ensure(lead, event.sequence);
        this.finish(run, event.sequence, {
          type: EventType.RUN_ERROR,
          message: event.message,
          code: event.code,
        });
        return;
      }
      case 'panel': {
        // A panel the run's agent showed or changed (docs/web.md, "Panels"): for a frontend
        // that renders panels beside the chat. Outside a run (a person's edit): not shown.
        const run = this.run;
        if (!run || run.turnId !== event.turn_id) return;
        const { type: _type, sequence: _sequence, at: _at, turn_id: _turn, ...panel } = event;
        this.emit(event.sequence, { type: EventType.CUSTOM, name: 'parley.panel', value: panel });
        return;
      }
      case 'state_changed':
        if (this.run) {
          this.showState(event.sequence, event.data);
        } else {
          this.heldState = { sequence: event.sequence, data: event.data };
        }
        return;
      default:
        return;
    }
  }

  /**
   * Nothing more is in the journal now: requests the run waits for are shown (a turn
   * journals all of a step's requests in one commit, so they are all in).
   */
  settle(): void {
    if (this.pending.length > 0) this.release();
  }

  /** The frames made since the last take (none while requests may still be coming). */
  take(): AgUiFrame[] {
    if (this.pending.length > 0) return [];
    return this.out.splice(0);
  }

  /**
   * What a resumed connection needs first to continue the run that is open at this point:
   * its `RUN_STARTED` again, and the open message's `TEXT_MESSAGE_START` (the same ids, so
   * a client continues them rather than adding new ones).
   */
  reopen(): AgUiEvent[] {
    const run = this.run;
    if (!run) return [];
    const events: AgUiEvent[] = [
      { type: EventType.RUN_STARTED, threadId: this.scope.threadId, runId: run.runId },
    ];
    if (run.reasoning) {
      events.push({ type: EventType.REASONING_START, messageId: run.reasoning.span });
      if (run.reasoning.message) {
        events.push({
          type: EventType.REASONING_MESSAGE_START,
          messageId: run.reasoning.message,
          role: 'reasoning',
        });
      }
    }
    if (run.message) {
      events.push({
        type: EventType.TEXT_MESSAGE_START,
        messageId: run.message.id,
        role: 'assistant',
      });
    }
    return events;
  }

  /**
   * A thread stream's start without a cursor, while no run is open: a run of its own that
   * hands the client the thread's messages so far (`MESSAGES_SNAPSHOT`) and the session's
   * state where it has one (later changes are patches of it), instead of replaying every
   * run. AG-UI clients take events inside a run only, hence the run around it.
   */
  snapshot(runId: string, messages: Message[]): AgUiEvent[] {
    const threadId = this.scope.threadId;
    const events: AgUiEvent[] = [
      { type: EventType.RUN_STARTED, threadId, runId },
      { type: EventType.MESSAGES_SNAPSHOT, messages },
    ];
    const state = this.heldState?.data ?? this.shownState;
    if (state) {
      events.push({ type: EventType.STATE_SNAPSHOT, snapshot: state });
      this.shownState = state;
      this.heldState = null;
    }
    events.push({ type: EventType.RUN_FINISHED, threadId, runId, outcome: { type: 'success' } });
    return events;
  }

  private mine(turnId: string): boolean {
    const only = this.scope.only;
    return !only || this.run?.turnId === turnId;
  }

  private ended(turnIds: string[]): boolean {
    const only = this.scope.only;
    return !only || turnIds.includes(only.turnId);
  }

  private emit(sequence: number, event: AgUiEvent): void {
    this.out.push({ sequence, event });
  }

  /** The run of `turnId`, started now if none is open (a run of another turn is closed). */
  private ensure(turnId: string, sequence: number): Run {
    if (this.run?.turnId === turnId) return this.run;
    if (this.run) {
      this.finish(this.run, sequence, {
        type: EventType.RUN_FINISHED,
        threadId: this.scope.threadId,
        runId: this.run.runId,
      });
    }
    return this.open(turnId, sequence);
  }

  private open(turnId: string, sequence: number): Run {
    const continued = this.paused.delete(turnId);
    const runId = this.scope.only?.runId ?? (continued ? `${turnId}.${sequence}` : turnId);
    const run: Run = {
      turnId,
      runId,
      attempt: 0,
      message: null,
      reasoning: null,
      text: '',
      lastMessageId: null,
      start: sequence,
    };
    this.run = run;
    this.emit(sequence, { type: EventType.RUN_STARTED, threadId: this.scope.threadId, runId });
    if (this.heldState) {
      this.showState(sequence, this.heldState.data);
      this.heldState = null;
    }
    return run;
  }

  /**
   * The session's state as it now stands: whole the first time this fold shows it
   * (`STATE_SNAPSHOT`), then as a JSON Patch of what it showed last (`STATE_DELTA`).
   */
  private showState(sequence: number, data: Record<string, unknown>): void {
    if (this.shownState === null) {
      this.emit(sequence, { type: EventType.STATE_SNAPSHOT, snapshot: data });
    } else {
      const delta = jsonPatch(this.shownState, data);
      if (delta.length > 0) this.emit(sequence, { type: EventType.STATE_DELTA, delta });
    }
    this.shownState = data;
  }

  /**
   * An earlier attempt's text is withdrawn (a retried step): its message ends, and a
   * `parley.attempt_reset` custom event names it so a client can drop it.
   */
  private withdraw(run: Run, sequence: number, attempt: number): void {
    const withdrawn = run.message?.id ?? run.lastMessageId;
    closeMessage(run, sequence, this.emitter);
    if (run.text === '') return;
    run.text = '';
    run.lastMessageId = null;
    this.emit(sequence, {
      type: EventType.CUSTOM,
      name: 'parley.attempt_reset',
      value: { turn_id: run.turnId, attempt, message_id: withdrawn },
    });
  }

  private release(): void {
    const run = this.run;
    const last = this.pending.at(-1);
    if (!run || !last) return;
    const interrupts = this.pending.flatMap((entry) => (entry.interrupt ? [entry.interrupt] : []));
    this.pending = [];
    this.paused.add(run.turnId);
    this.finish(run, last.sequence, {
      type: EventType.RUN_FINISHED,
      threadId: this.scope.threadId,
      runId: run.runId,
      outcome: interrupts.length > 0 ? { type: 'interrupt', interrupts } : { type: 'success' },
    });
  }

  private finish(run: Run, sequence: number, end: AgUiEvent): void {
    closeMessage(run, sequence, this.emitter);
    this.emit(sequence, end);
    this.run = null;
    if (this.scope.only) this.finished = true;
  }
}
