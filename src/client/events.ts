/**
 * The journal's event types as a client receives them (PROTOCOL.md §3): a discriminated
 * union on `type`. Every durable event carries `sequence` (the resume cursor) and `at`;
 * events that belong to a turn carry `turn_id`. `typing` is live-only and has no sequence.
 */

interface EventBase {
  sequence: number;
  at: string;
  turn_id?: string;
}

export interface TranscriptEntry {
  id: string;
  role: 'user' | 'assistant' | 'system';
  author: string;
  content: string;
  options?: unknown;
}

/** A transcript message: the greeting, a user post, another participant's post. */
export interface MessageEvent extends EventBase {
  type: 'message';
  message: TranscriptEntry;
}

/** A worker began (or resumed) a turn. */
export interface TurnStartedEvent extends EventBase {
  type: 'turn_started';
  turn_id: string;
  attempt: number;
  turn_ids?: string[];
}

/** A fragment of assistant text of the current attempt. */
export interface TextDeltaEvent extends EventBase {
  type: 'text_delta';
  turn_id: string;
  delta: string;
}

/** An earlier attempt of this turn was abandoned: drop its partial text. */
export interface AttemptResetEvent extends EventBase {
  type: 'attempt_reset';
  turn_id: string;
  attempt?: number;
}

export interface ToolCallEvent extends EventBase {
  type: 'tool_call';
  call_id: string;
  tool: string;
  arguments: unknown;
}

export type InputKind = 'approval' | 'question' | 'budget_extension';

/** The turn stops here until a person answers (PROTOCOL.md §4). */
export interface InputRequiredEvent extends EventBase {
  type: 'input_required';
  request_id: string;
  kind: InputKind;
  call_id?: string;
  tool?: string;
  arguments?: unknown;
  prompt?: string;
}

export interface InputResolvedEvent extends EventBase {
  type: 'input_resolved';
  request_id: string;
  approved: boolean;
  actor: { user: string; tenant: string };
}

export interface ToolResultEvent extends EventBase {
  type: 'tool_result';
  call_id: string;
  tool: string;
  ok: boolean;
  result?: unknown;
  error?: unknown;
}

/** Usage of one provider call. */
export interface UsageEvent extends EventBase {
  type: 'usage';
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  model: string;
  latency_ms: number;
}

/** The reply is complete; `turn_ids` lists every admitted turn it answers. */
export interface DoneEvent extends EventBase {
  type: 'done';
  final_message: { id: string; role: 'assistant'; content: string };
  turn_ids: string[];
}

export interface CancelledEvent extends EventBase {
  type: 'cancelled';
  command_id?: string;
  turn_ids: string[];
}

/** The turn failed for good (for example it was parked). */
export interface ErrorEvent extends EventBase {
  type: 'error';
  code: string;
  message: string;
  turn_ids: string[];
}

export type ParleyEvent =
  | MessageEvent
  | TurnStartedEvent
  | TextDeltaEvent
  | AttemptResetEvent
  | ToolCallEvent
  | InputRequiredEvent
  | InputResolvedEvent
  | ToolResultEvent
  | UsageEvent
  | DoneEvent
  | CancelledEvent
  | ErrorEvent;

export type ParleyEventType = ParleyEvent['type'];

/** "Assistant is writing…": live-only, never journaled, no sequence. */
export interface TypingEvent {
  type: 'typing';
  session_id?: string;
}

/** Events after which the turn waits for a person or is over: done, cancelled, error, input_required. */
export function isTerminalEvent(event: ParleyEvent): boolean {
  return (
    event.type === 'done' ||
    event.type === 'error' ||
    event.type === 'cancelled' ||
    event.type === 'input_required'
  );
}
