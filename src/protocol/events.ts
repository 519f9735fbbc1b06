/**
 * The journal's event types (PROTOCOL.md §3), shared by the server (which builds and
 * stores them) and the client SDK (which reads them). One discriminated union on `type`;
 * every event is built by `newEvent`, whose `data` is type-checked against this union, so
 * the server cannot write a shape the client's types do not describe.
 *
 * This module imports nothing at run time (types only): the client runs in browsers.
 */
import type { PanelComponent } from './panels.js';

export interface Actor {
  user: string;
  tenant: string;
}

interface EventBase {
  sequence: number;
  at: string;
  turn_id?: string;
}

/** Choices offered with a reply; a client presses one by admitting a turn with `option`. */
export interface OptionsOffer {
  request_id: string;
  choices: string[];
}

/** A transcript message as events carry it. */
export interface TranscriptEntry {
  id: string;
  role: 'user' | 'assistant' | 'system';
  author: string;
  content: string;
  /** The option this user message pressed. */
  option?: { request_id: string; value: string };
  /** The images a user message carried: attachment ids of its session (none: absent). */
  attachments?: string[];
}

/** A transcript message: the greeting, a user post, another participant's post. */
export interface MessageEvent extends EventBase {
  type: 'message';
  message: TranscriptEntry;
}

/** A worker began (or resumed) a turn; `turn_ids` is every turn of the burst. */
export interface TurnStartedEvent extends EventBase {
  type: 'turn_started';
  turn_id: string;
  attempt: number;
  turn_ids: string[];
  /** The session's agent (absent in journals written before it was recorded). */
  agent?: string;
  /**
   * The agent's definition revision the turn runs with: the one it first started with,
   * kept by every later step and attempt (null: the server keeps no stored definitions).
   */
  agent_revision?: number | null;
  /**
   * The revision the turn had recorded but that could no longer be loaded (a deploy
   * changed what it needs): the turn continues with `agent_revision`.
   */
  unpinned_revision?: number;
}

/** A fragment of assistant text of the current attempt. */
export interface TextDeltaEvent extends EventBase {
  type: 'text_delta';
  turn_id: string;
  delta: string;
}

/**
 * A fragment of the model's reasoning (Anthropic thinking, OpenAI reasoning summaries,
 * Gemini thoughts), never part of the reply. `delta` is sent only to clients that ask for
 * it (`?include=reasoning`); others get the event without it, so sequences stay gapless.
 */
export interface ReasoningDeltaEvent extends EventBase {
  type: 'reasoning_delta';
  turn_id: string;
  delta?: string;
}

/** The scope gate found the turn off its topic (or failed, which counts as off-topic). */
export interface GateEvent extends EventBase {
  type: 'gate';
  turn_id: string;
  on_topic: boolean;
  reason: string;
  /** True when the verdict is the fail-closed default (an error, a timeout, no answer). */
  failed: boolean;
}

/** An earlier attempt of this turn was abandoned: drop its partial text. */
export interface AttemptResetEvent extends EventBase {
  type: 'attempt_reset';
  turn_id: string;
  attempt: number;
}

export interface ToolCallEvent extends EventBase {
  type: 'tool_call';
  turn_id: string;
  call_id: string;
  tool: string;
  arguments: unknown;
}

/**
 * What a request asks: approve a call, answer a question, grant more budget, say whether a
 * call whose result is unknown took effect (`reconciliation`), grant a tool access to a
 * third party (`external_auth`: `provider`, `url`), or run a tool the client declared
 * and return its output (`client_tool`: `tool`, `arguments`).
 */
export type InputKind =
  'approval' | 'question' | 'budget_extension' | 'reconciliation' | 'external_auth' | 'client_tool';

/**
 * Where an input request stands: `expired` (superseded by a newer message), `cancelled`
 * (its turn was), `timeout` (its deadline passed), `error` (its turn failed for good).
 */
export type InputState = 'pending' | 'answered' | 'expired' | 'cancelled' | 'timeout' | 'error';

/** The user an expired deadline answers as (`input_resolved.actor.user`). */
export const timeoutActor = 'system:timeout';

/** The turn stops here until a person answers (PROTOCOL.md §4). */
export interface InputRequiredEvent extends EventBase {
  type: 'input_required';
  turn_id: string;
  request_id: string;
  kind: InputKind;
  call_id: string;
  tool?: string;
  arguments?: unknown;
  prompt?: string;
  /** An approval's sha-256 (hex) of the canonical JSON of `arguments`. */
  arguments_digest?: string;
  /** When the safe default applies if nobody answers (absent: it waits for ever). */
  deadline_at?: string;
  /** external_auth: the third party the tool needs access to. */
  provider?: string;
  /** external_auth: where the person grants that access. */
  url?: string;
  /** external_auth: the access asked for, as the tool named it. */
  scope?: string;
}

/**
 * A request was answered (`actor` is who answered) or expired without an answer
 * (`expired` says why: superseded, its turn cancelled, or its turn ended with an error;
 * `actor` is then null and `approved` false: nothing ran), or its
 * deadline passed (`state: timeout`, actor `system:timeout`, `approved` the safe default).
 */
export interface InputResolvedEvent extends EventBase {
  type: 'input_resolved';
  turn_id: string;
  request_id: string;
  approved: boolean;
  actor: Actor | null;
  expired?: 'superseded' | 'cancelled' | 'error';
  /** What the request became (absent in events journaled before requests had states). */
  state?: InputState;
  /** An agent's answer (actor `agent:NAME`): its decision's reason, journaled as given. */
  response?: Record<string, unknown>;
  /** external_auth: the answer named a credential (never the reference itself). */
  credential_provided?: boolean;
}

/**
 * A pending request reached a step of its escalation chain (the approval timer): from now
 * on `to` (user:NAME or role:NAME) may answer it too, sees its session, and its inbox
 * lists it. `step` counts the chain's steps from 1.
 */
export interface InputEscalatedEvent extends EventBase {
  type: 'input_escalated';
  turn_id: string;
  request_id: string;
  step: number;
  to: string;
}

/** A pending request's deadline is near: `deadline_at`, when its safe default applies. */
export interface InputReminderEvent extends EventBase {
  type: 'input_reminder';
  turn_id: string;
  request_id: string;
  deadline_at: string;
}

export interface ToolError {
  code: string;
  message: string;
}

export interface ToolResultEvent extends EventBase {
  type: 'tool_result';
  turn_id: string;
  call_id: string;
  tool: string;
  ok: boolean;
  result?: unknown;
  error?: ToolError;
  /** How long the call ran (absent for calls that never ran). */
  duration_ms?: number;
}

/**
 * Usage of one provider call. `input_tokens` counts every input token, cached ones
 * included; `output_tokens` includes reasoning tokens. A call that failed or was cancelled
 * is billed too (`outcome`), with the provider's counts when it sent them, else estimates.
 */
export interface UsageEvent extends EventBase {
  type: 'usage';
  turn_id: string;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens: number;
  cost_usd: number;
  model: string;
  latency_ms: number;
  /** From the call's start to its first output; null when there was none. */
  ttft_ms: number | null;
  /** `reply`: the agent's model; `gate`: the scope gate's classification. */
  purpose: 'reply' | 'gate';
  outcome: 'ok' | 'failed' | 'cancelled';
  /** The tool calls this call asked for that run or wait for a person (absent: none). */
  tool_calls?: number;
  /** How long the tool calls this call follows took, added up (absent: none). */
  tool_ms?: number;
}

export interface FinalMessage {
  id: string;
  role: 'assistant';
  content: string;
  options?: OptionsOffer;
}

/** The reply is complete; `turn_ids` lists every admitted turn it answers. */
export interface DoneEvent extends EventBase {
  type: 'done';
  turn_id: string;
  final_message: FinalMessage;
  turn_ids: string[];
}

/** The turn was cancelled by `actor` with `command_id`; names every turn it ended. */
export interface CancelledEvent extends EventBase {
  type: 'cancelled';
  turn_id: string;
  command_id: string | null;
  turn_ids: string[];
  actor: Actor | null;
}

/** The turn failed for good (for example it was parked). Never raw provider text. */
export interface ErrorEvent extends EventBase {
  type: 'error';
  code: string;
  message: string;
  turn_ids: string[];
}

/** What the progress watchdog saw stall: a stream of keep-alives, a tool, or nothing at all. */
export type StallKind = 'model_stream' | 'tool' | 'no_progress';

/**
 * The progress watchdog saw a step of the turn make no progress for `since_ms` and stopped
 * it: `retry` (the step runs again; clients drop the attempt's text if an `attempt_reset`
 * follows) or `end` (the recovery budget is spent: an `error` with code `stalled` follows).
 * `call_id` and `tool` name the call of a `tool` stall.
 */
export interface StalledEvent extends EventBase {
  type: 'stalled';
  turn_id: string;
  what: StallKind;
  since_ms: number;
  action: 'retry' | 'end';
  call_id?: string;
  tool?: string;
}

/** Seed 003's execution statuses. */
export type ExecutionStatus =
  | 'starting'
  | 'running'
  | 'success'
  | 'interrupted'
  | 'cancelled'
  | 'timeout'
  | 'error'
  | 'waiting'
  | 'blocked'
  | 'limit_reached';

/** A loop mission's own status. */
export type LoopStatus =
  | 'idle'
  | 'running'
  | 'evaluating'
  | 'waiting'
  | 'blocked'
  | 'completed'
  | 'failed'
  | 'limit_reached';

/** What the evaluation step decided after an iteration. */
export interface LoopDecision {
  decision: 'continue' | 'complete' | 'blocked';
  reason: string;
  iteration: number;
}

/**
 * An execution of a mission changed status; journaled in the execution's session, so it
 * streams over the session's SSE endpoint. `result` is set once it has ended.
 */
export interface ExecutionStatusEvent extends EventBase {
  type: 'execution_status';
  execution_id: string;
  mission: string;
  status: ExecutionStatus;
  loop_status: LoopStatus | null;
  iteration: number;
  max_iterations: number;
  next_run_at: string | null;
  loop_decision: LoopDecision | null;
  result?: unknown;
  /** Tokens of the execution's own model calls so far (evaluations), besides its turns'. */
  usage?: { input_tokens: number; output_tokens: number };
}

/** The next turn's prompt starts from the checkpoint at `to_sequence` (nothing is deleted). */
export interface RewoundEvent extends EventBase {
  type: 'rewound';
  to_sequence: number;
  actor: Actor;
}

/**
 * A session was forked at a checkpoint: journaled in both, so each names the other. The
 * new session's transcript is the original's up to `at_sequence`.
 */
export interface ForkedEvent extends EventBase {
  type: 'forked';
  from_session_id: string;
  to_session_id: string;
  at_sequence: number;
  actor: Actor;
}

/**
 * The session's domain state changed (docs/governance.md, "Sessions with state"): `data`
 * is the whole new value; `result` when it was set; `completed` when the change closed
 * the session. `by`: a tool of the turn, a pressed option's effect, an admin's edit, or
 * the state a user's client sent with a turn (AG-UI's `state`, journaled with that turn).
 */
export interface StateChangedEvent extends EventBase {
  type: 'state_changed';
  data: Record<string, unknown>;
  result?: unknown;
  completed?: boolean;
  by: 'tool' | 'option' | 'admin' | 'user';
  /** `by: user`: whose client sent it. */
  actor?: Actor;
}

/**
 * A panel of the session was shown, changed or deleted (docs/web.md, "Panels"): by the
 * turn's tools (`show_panel`, `update_panel`, journaled with the reply) or by a person
 * through the API. `shown` carries the whole panel; `updated` what changed (a document
 * whole, never a patch); `deleted` only the id. An `ephemeral` panel is in no store: it
 * lives in the streams that show this event.
 */
export interface PanelEvent extends EventBase {
  type: 'panel';
  action: 'shown' | 'updated' | 'deleted';
  panel_id: string;
  scope?: 'session' | 'workspace' | 'ephemeral';
  title?: string;
  channel?: string;
  document?: PanelComponent;
  by: 'tool' | 'user';
}

export type ParleyEvent =
  | MessageEvent
  | TurnStartedEvent
  | TextDeltaEvent
  | ReasoningDeltaEvent
  | GateEvent
  | AttemptResetEvent
  | ToolCallEvent
  | InputRequiredEvent
  | InputResolvedEvent
  | InputEscalatedEvent
  | InputReminderEvent
  | ToolResultEvent
  | UsageEvent
  | DoneEvent
  | CancelledEvent
  | ErrorEvent
  | StalledEvent
  | ExecutionStatusEvent
  | RewoundEvent
  | ForkedEvent
  | StateChangedEvent
  | PanelEvent;

export type ParleyEventType = ParleyEvent['type'];

/** What an event of type T carries besides `type`, `sequence`, `at` and `turn_id`. */
export type EventData<T extends ParleyEventType> = Omit<
  Extract<ParleyEvent, { type: T }>,
  'type' | 'sequence' | 'at' | 'turn_id'
>;

/** An event about to be journaled: its sequence and time are assigned when it is appended. */
export interface NewEvent<T extends ParleyEventType = ParleyEventType> {
  type: T;
  turn_id: string | null;
  data: EventData<T>;
}

/** The one constructor of journal events. */
export function newEvent<T extends ParleyEventType>(
  type: T,
  turnId: string | null,
  data: EventData<T>,
): NewEvent<T> {
  return { type, turn_id: turnId, data };
}

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
