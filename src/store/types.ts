import type { PanelComponent } from '../protocol/panels.js';
/**
 * Glossary — the core types, named as in PROTOCOL.md and RUNTIME.md.
 *
 * - session: one conversation; owns the journal counter and the lease.
 * - journal: the `events` table; per-session `sequence` from 1, gapless, the source of
 *   truth every SSE reader replays from.
 * - turn: one admitted user input (`turn_id`, the client's idempotency key). A turn is
 *   answered by exactly one `done`, `cancelled` or `error` event.
 * - input position / cursor: admitted turns are numbered per session; the cursor is the
 *   highest position a finished turn consumed. Position > cursor = pending input.
 * - burst: every pending turn collected in one drain-loop iteration, answered together;
 *   its lead turn is the first one, and names the assistant message.
 * - lease: a random token + expiry on the session row; every write of a turn is gated on
 *   the token still being the worker's own.
 * - attempt: one try at answering a burst; a new owner of partial output starts a new one
 *   and journals `attempt_reset`.
 */
export type SessionState = 'idle' | 'queued' | 'running' | 'input_required' | 'parked' | 'closed';
export type { TurnState } from '../protocol/rest.js';

export interface SessionRow {
  session_id: string;
  tenant: string;
  agent: string;
  title: string | null;
  state: SessionState;
  last_sequence: number;
  earliest_sequence: number;
  input_count: number;
  input_cursor: number;
  lease_token: string | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  claim_count: number;
  attempt: number;
  partial_output: boolean;
  current_turn_id: string | null;
  cancel_command_id: string | null;
  burst: BurstState | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  /** Who created it (null: before sessions had owners). */
  owner: string | null;
  visibility: Visibility;
  members: string[];
  /** The workspace it is grouped in (null: none). */
  workspace_id: string | null;
  /** The domain state and result (null until first written). */
  data: Record<string, unknown> | null;
  result: unknown;
  created_at: Date;
  updated_at: Date;
}

/** The right to write to one session, for as long as the token is still on its row. */
export interface Lease {
  sessionId: string;
  tenant: string;
  token: string;
}

export type { NewEvent } from '../protocol/events.js';
import type { Visibility } from '../config/types.js';
import type { InputKind } from '../protocol/events.js';
/** A journaled event as clients see it (PROTOCOL.md §3). */
export type { ParleyEvent as JournalEvent } from '../protocol/events.js';

export type { TranscriptMessage } from '../protocol/rest.js';

/** Raised by a token-gated write that applied nothing: another worker owns the session. */
export class LeaseLostError extends Error {
  constructor(readonly sessionId: string) {
    super(`lease lost on session ${sessionId}`);
    this.name = 'LeaseLostError';
  }
}

/**
 * A memory write promised by a turn (tools/memory/effects.ts buffers them): applied in the
 * transaction that commits the turn's reply, or never.
 */
export type MemoryEffect =
  | { kind: 'remember'; effect_id: string; memory_id: string; text: string }
  | { kind: 'forget'; effect_id: string; memory_id: string };

/**
 * A change of the session's domain state promised by a turn (`update_state`): the whole
 * new `data` (already validated), the new `result` when the call set one, and whether the
 * session completes. Buffered with the memory writes and applied with the same commit;
 * the last one of a turn wins.
 */
export interface StateEffect {
  kind: 'state';
  effect_id: string;
  data: Record<string, unknown>;
  /** Present (null included): the new result; absent: unchanged. */
  result?: unknown;
  complete: boolean;
}

/**
 * A panel shown or changed by a turn's tools (`show_panel`, `update_panel`; docs/web.md,
 * "Panels"): stored with the commit (an ephemeral panel never is) and journaled as a
 * `panel` event by the same statement. The document is already checked.
 */
export type PanelEffect =
  | {
      kind: 'panel_show';
      effect_id: string;
      panel_id: string;
      scope: 'session' | 'workspace' | 'ephemeral';
      title: string;
      channel: string;
      document: PanelComponent;
    }
  | {
      kind: 'panel_update';
      effect_id: string;
      panel_id: string;
      title?: string;
      document?: PanelComponent;
    };

/** Every effect a turn's tools may buffer. */
export type BufferedEffect = MemoryEffect | StateEffect | PanelEffect;

/** The turns a closing statement finishes. */
export interface BurstRef {
  turnIds: string[];
  /** Position of the burst's last turn: the cursor moves here. */
  lastPosition: number;
}

/** A tool call of the burst being answered, with where it stands (docs/design/approvals.md). */
export type CallStatus =
  | 'pending'
  | 'awaiting'
  | 'approved'
  | 'rejected'
  | 'denied'
  | 'superseded'
  | 'running'
  | 'done'
  | 'failed';

export interface BurstCall {
  call_id: string;
  tool: string;
  arguments: unknown;
  policy: 'allow' | 'approve' | 'deny';
  status: CallStatus;
  request_id?: string;
  kind?: InputKind;
  /** What the tool returned, or the text the model is told instead (rejected, denied…). */
  result?: unknown;
  error?: { code: string; message: string };
  /** Its `tool_result` is journaled. */
  reported?: boolean;
  /** How long it ran. */
  duration_ms?: number;
  /** What the tool recorded about work it started outside (tools/types.ts CallReceipt). */
  receipt?: Record<string, unknown>;
}

export interface BurstStep {
  /** `model`: one model call (text + calls); `input`: inputs folded in later (supersede). */
  kind: 'model' | 'input';
  text: string;
  calls: BurstCall[];
}

/** The working conversation of the burst being answered, kept on the session row. */
export interface BurstState {
  lead: string;
  turn_ids: string[];
  /** The turns folded into the first user message (later ones are `input` steps). */
  base_turn_ids: string[];
  steps: BurstStep[];
  /** Budget granted so far (extended by an approved budget_extension). */
  budget: { iterations: number; tool_calls: number };
  /** Memory and state writes the turn's tools buffered: applied with the commit, or never. */
  effects?: BufferedEffect[];
}

/**
 * What a pending input request does by itself before its deadline, at `at` (ISO time): an
 * escalation re-routes it (`to`: user:NAME or role:NAME; `step` counts from 1), a reminder
 * tells its audience the deadline is near.
 */
export type Nudge =
  { at: string; kind: 'escalate'; step: number; to: string } | { at: string; kind: 'remind' };

/**
 * A tool the client declares with its message (an AG-UI front end's tools, the function
 * tools of an OpenAI request): the model may call it, and the call waits, as an input
 * request of kind `client_tool`, for the client to run it and send back its output.
 * Parley never runs it and never checks its arguments: they are the client's to read.
 */
export interface ClientTool {
  name: string;
  description: string;
  /** The JSON schema of its arguments, as the client gave it (an object schema). */
  parameters: Record<string, unknown>;
}
