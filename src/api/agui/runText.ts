import { EventType, type Event as AgUiEvent } from '@ag-ui/core';

// A run's streaming text (docs/protocols.md, "AG-UI"): the assistant message and the
// reasoning span open and close around each other, as the fold emits them.

/** A run of the fold: a turn's stretch of work, and what of it streams now. */
export interface Run {
  /** The turn whose events the run shows (a burst's lead). */
  turnId: string;
  runId: string;
  attempt: number;
  /** The assistant message being streamed, if one is open. */
  message: { id: string; text: string } | null;
  /** The reasoning being streamed, if any: its span, and its message when text is shown. */
  reasoning: { span: string; message: string | null } | null;
  /** The text of the attempt so far (every message of it), to reconcile with the reply. */
  text: string;
  lastMessageId: string | null;
  /** The journal sequence the run started at. */
  start: number;
}

/** How the fold emits an event, tagged with the journal sequence it came from. */
export type Emit = (sequence: number, event: AgUiEvent) => void;

/**
 * Reasoning streams in a span of its own, closed before the reply's text (or a tool
 * call) starts; its text, when shown, as one reasoning message.
 */
export function appendReasoning(
  run: Run,
  sequence: number,
  delta: string | undefined,
  showText: boolean,
  emit: Emit,
): void {
  closeText(run, sequence, emit);
  if (!run.reasoning) {
    run.reasoning = { span: `${run.turnId}.${sequence}.reasoning`, message: null };
    emit(sequence, { type: EventType.REASONING_START, messageId: run.reasoning.span });
  }
  if (!showText || !delta) return;
  if (!run.reasoning.message) {
    run.reasoning.message = `${run.turnId}.${sequence}.thinking`;
    emit(sequence, {
      type: EventType.REASONING_MESSAGE_START,
      messageId: run.reasoning.message,
      role: 'reasoning',
    });
  }
  emit(sequence, {
    type: EventType.REASONING_MESSAGE_CONTENT,
    messageId: run.reasoning.message,
    delta,
  });
}

export function closeReasoning(run: Run, sequence: number, emit: Emit): void {
  const reasoning = run.reasoning;
  if (!reasoning) return;
  if (reasoning.message) {
    emit(sequence, { type: EventType.REASONING_MESSAGE_END, messageId: reasoning.message });
  }
  emit(sequence, { type: EventType.REASONING_END, messageId: reasoning.span });
  run.reasoning = null;
}

export function appendText(run: Run, sequence: number, delta: string, emit: Emit): void {
  closeReasoning(run, sequence, emit);
  if (!run.message) {
    run.message = { id: `${run.turnId}.${sequence}`, text: '' };
    run.lastMessageId = run.message.id;
    emit(sequence, {
      type: EventType.TEXT_MESSAGE_START,
      messageId: run.message.id,
      role: 'assistant',
    });
  }
  run.message.text += delta;
  run.text += delta;
  emit(sequence, {
    type: EventType.TEXT_MESSAGE_CONTENT,
    messageId: run.message.id,
    delta,
  });
}

/** Whatever streams is closed: the reasoning, the text message. */
export function closeMessage(run: Run, sequence: number, emit: Emit): void {
  closeReasoning(run, sequence, emit);
  closeText(run, sequence, emit);
}

export function closeText(run: Run, sequence: number, emit: Emit): void {
  if (!run.message) return;
  emit(sequence, { type: EventType.TEXT_MESSAGE_END, messageId: run.message.id });
  run.message = null;
}
