/**
 * Glossary of the tool side (docs/tools.md, docs/design/approvals.md).
 *
 * - tool: something a model may call by name with JSON arguments, described by a JSON
 *   Schema. Built-in (clock, http_fetch, shell…), from an MCP server (`server__tool`) or
 *   the skill loader.
 * - policy: what an agent does with a call of it: `allow` (run), `approve` (a person
 *   decides first), `deny` (never offered; a call is refused).
 * - scope: who and where a call runs for (tenant, agent, user, session, its working
 *   directory, the turn's buffered memory effects).
 * - effect: a write a tool promises but that only happens in the transaction committing
 *   the turn (memory), so a dropped or cancelled turn leaves none.
 * - credential reference: a name of a user's credential for a third party, stored
 *   elsewhere (`vault:...`, a variable the operator configured). A tool reads it with
 *   `context.credentials.get(provider)`; Parley keeps only the reference.
 * - reconciliation: after a crash inside a non-idempotent call, whether its effect
 *   happened; the tool's own `reconcile` is asked first, then (`on_unknown: ask`) a person.
 */
import type { JSONSchema7 } from '@ai-sdk/provider';
import type { MemoryEffects } from './memory/effects.js';

export type JsonSchema = JSONSchema7;
export type Policy = 'allow' | 'approve' | 'deny';

/** Where a tool comes from, as `parley tools list` shows it. */
export type ToolSource = 'built-in' | 'skill' | `mcp:${string}`;

/** Who and where one call runs for. Built by the runtime for each call of a turn. */
export interface CallScope {
  tenant: string;
  agent: string;
  /** The user the turn answers (the principal of its lead input): memory belongs to them. */
  user: string;
  sessionId: string;
  callId: string;
  /** The lead turn of the burst the call belongs to (absent outside the tool loop). */
  turnId?: string;
  /** The session's working directory on the host (shell); created on first use. */
  workspaceDir: string;
  /** The turn's buffered memory writes; the same object for every call of the turn. */
  memory: MemoryEffects;
  /** The call's receipt (absent outside the tool loop: unit tests, reconcile-only use). */
  receipt?: CallReceipt;
}

/**
 * A call's receipt: a small JSON note a tool records about what it started outside Parley
 * (a remote task's id), saved with the call under the turn's lease before `record`
 * resolves. A run of the same call after a crash — and its `reconcile` — reads it back in
 * `value`, so the tool can follow what it started instead of starting it again.
 */
export interface CallReceipt {
  /** What the call recorded last (null: nothing yet). */
  readonly value: Record<string, unknown> | null;
  /** Saves `value` (at most 4 KiB of JSON) with the call; resolves once it is durable. */
  record(value: Record<string, unknown>): Promise<void>;
}

/** The largest receipt a call may record, in bytes of JSON. */
export const MAX_RECEIPT_BYTES = 4096;

export interface ToolContext {
  /**
   * Aborted at the call's timeout (reason: a ToolError with code `timeout`) or when the
   * caller gives up (code `aborted`). Tools stop what they started when it fires.
   */
  signal: AbortSignal;
  /** The call's time limit; tools that manage a process or a request use it too. */
  timeoutMs: number;
  /** Absent when a tool runs outside a turn (unit tests of stateless tools). */
  scope: CallScope | null;
  /** The agent's options for this tool, as the tool's `options` schema compiled them. */
  options: unknown;
  /**
   * The turn's user's credential references by provider (null: none stored). A tool that
   * finds none throws `NeedsAuthorization`; the reference is passed on, never shown.
   * Absent outside a turn.
   */
  credentials?: Credentials;
}

/** A user's stored credential references, read when a tool asks. */
export interface Credentials {
  get(provider: string): Promise<string | null>;
}

/** Outside a turn (unit tests of stateless tools) nobody's credentials are known. */
export const noCredentials: Credentials = { get: () => Promise.resolve(null) };

/** What a tool's `reconcile` found about a call whose result is unknown. */
export type Reconciled = 'done' | 'not_done' | 'unknown';

export interface Tool {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  execute(args: unknown, context: ToolContext): Promise<unknown>;
  /** Default `built-in`. */
  source?: ToolSource;
  /** Policy when the agent's entry does not name one (shell and MCP tools: `approve`). */
  defaultPolicy?: Policy;
  /** Time limit when the agent's entry sets no `timeout_ms`. */
  defaultTimeoutMs?: number;
  /**
   * Whether a call found started without a result after a crash runs again when the
   * agent's entry does not say (`idempotent`). True for a tool whose only effect is
   * buffered in the burst and applied by the turn's commit, the same whether it ran once
   * or twice. Absent: false.
   */
  defaultIdempotent?: boolean;
  /**
   * Checks and compiles the tool's own keys of an agent's entry (besides `policy`,
   * `timeout_ms`, `idempotent`); throws a message naming the key. Absent: no own keys.
   */
  compileOptions?: (raw: Record<string, unknown>) => unknown;
  /**
   * Asked after a crash inside a call of this tool that started and has no result: did
   * the call with these arguments take effect? `done`: the model is told it did (result
   * unknown); `not_done`: the call runs again; `unknown`: the entry's `on_unknown` applies.
   * The context is the call's own (same scope, signal, time limit).
   */
  reconcile?: (args: unknown, context: ToolContext) => Promise<Reconciled>;
  /** Can a call run now? Absent: always (an MCP tool: while its server is ready). */
  available?: () => boolean;
}

/** Stable codes a tool failure is reported with; match on these, never on message text. */
export type ToolErrorCode =
  | 'invalid_arguments'
  | 'invalid_expression'
  | 'timeout'
  | 'aborted'
  | 'tool_failed'
  | 'unavailable'
  | 'not_allowed'
  | 'too_large'
  | 'not_found'
  // A shell call reached one of its limits (docs/tools.md, "Limits").
  | 'memory_limit'
  | 'cpu_limit'
  | 'process_limit'
  | 'workspace_limit'
  // The tool needs a user's credential it does not have (NeedsAuthorization).
  | 'needs_authorization';

/** A tool failure meant to be shown (to the model, to people): no stack, no secrets. */
export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ToolError';
  }

  toBody(): { code: ToolErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

/**
 * Thrown by a tool that needs a user's credential for a third party it does not have
 * (`context.credentials.get(provider)` was null), before it does anything: the turn asks
 * a person (`external_auth`, with `url`), stores the credential reference the answer
 * names, and runs the call again.
 */
export class NeedsAuthorization extends Error {
  readonly provider: string;
  readonly url: string;
  readonly scope: string | null;

  constructor(request: { provider: string; url: string; scope?: string }) {
    super(`authorization needed for ${request.provider}`);
    this.name = 'NeedsAuthorization';
    this.provider = request.provider;
    this.url = request.url;
    this.scope = request.scope ?? null;
  }
}

/** The scope a tool cannot run without; a clear tool error instead of a crash. */
export function requireScope(tool: string, context: ToolContext): CallScope {
  if (!context.scope) throw new ToolError('tool_failed', `${tool} can only run inside a turn`);
  return context.scope;
}
