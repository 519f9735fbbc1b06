import { DEFAULT_MAX_RESULT_BYTES, cutUtf8, truncateResult } from './truncate.js';
import {
  NeedsAuthorization,
  noCredentials,
  ToolError,
  type CallScope,
  type Credentials,
  type Reconciled,
  type Tool,
} from './types.js';
import { validateArguments } from './validate.js';

export type ToolOutcome = (
  | { ok: true; result: unknown }
  | { ok: false; error: { code: ToolError['code'] | 'unknown_tool'; message: string } }
) & {
  /** Wall time from the start of the call to its outcome, for `tool_result` events. */
  durationMs?: number;
  /**
   * The tool ignored its signal: it was still running when its timeout and grace ran out,
   * and is no longer awaited (the progress watchdog reports such a call).
   */
  abandoned?: true;
  /** The tool threw NeedsAuthorization: nothing ran; a person may grant the access. */
  authorization?: { provider: string; url: string; scope: string | null };
};

export interface RunToolOptions {
  /** The caller giving up (lease lost, shutdown): the outcome is `aborted` at once. */
  signal: AbortSignal;
  timeoutMs: number;
  scope?: CallScope | null;
  /** The agent's compiled options for this tool (ResolvedTool.options). */
  options?: unknown;
  /** The turn's user's credential references (absent: none). */
  credentials?: Credentials;
  /** `tools.max_result_bytes`: longer results are truncated with a marker. */
  maxResultBytes?: number;
  /**
   * After the timeout fires, how long the tool may still take to report its own outcome
   * (a shell killed at its timeout says so, with the output it had). Default 1000 ms.
   */
  graceMs?: number;
}

const MAX_ERROR_BYTES = 8192;

function failure(error: ToolError): ToolOutcome {
  return {
    ok: false,
    error: { code: error.code, message: cutUtf8(error.message, MAX_ERROR_BYTES) },
  };
}

/** Maps anything a tool threw to a reportable outcome; foreign errors keep no detail. */
function fromThrown(tool: Tool, thrown: unknown): ToolOutcome {
  if (thrown instanceof ToolError) return failure(thrown);
  if (thrown instanceof NeedsAuthorization) {
    return {
      ...failure(
        new ToolError(
          'needs_authorization',
          `tool ${tool.name} needs access to ${thrown.provider}; nothing ran`,
        ),
      ),
      authorization: { provider: thrown.provider, url: thrown.url, scope: thrown.scope },
    };
  }
  return failure(new ToolError('tool_failed', `tool ${tool.name} failed`));
}

/**
 * Validates and runs one call. Never throws for tool failures: invalid arguments, a
 * thrown error, a timeout or the caller's abort all come back as `{ ok: false }`.
 *
 * At the timeout the tool's signal is aborted (reason: ToolError `timeout`) and the tool
 * gets `graceMs` to stop what it started and report; after that it is no longer awaited
 * (not killed: only tools that honour the signal can be stopped). A result that arrives
 * within the grace is kept: the work was done, and telling the model otherwise invites a
 * second run. Results over `maxResultBytes` of JSON are truncated with a marker.
 */
export async function runTool(
  tool: Tool,
  args: unknown,
  options: RunToolOptions,
): Promise<ToolOutcome> {
  if (!(options.timeoutMs > 0) || !Number.isFinite(options.timeoutMs)) {
    throw new RangeError('timeoutMs must be a positive finite number');
  }
  const started = Date.now();
  const timed = (outcome: ToolOutcome): ToolOutcome => ({
    ...outcome,
    durationMs: Date.now() - started,
  });
  const invalid = validateArguments(tool, args);
  if (invalid) return timed(failure(invalid));
  const aborted = () => failure(new ToolError('aborted', `tool ${tool.name} was cancelled`));
  if (options.signal.aborted) return timed(aborted());

  const timeout = new ToolError(
    'timeout',
    `tool ${tool.name} did not finish within ${options.timeoutMs} ms; ` +
      'it may or may not have completed',
  );
  const controller = new AbortController();
  const timers: NodeJS.Timeout[] = [];
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<ToolOutcome>((resolve) => {
    timers.push(
      setTimeout(() => {
        controller.abort(timeout);
        timers.push(
          setTimeout(
            () => resolve({ ...failure(timeout), abandoned: true }),
            options.graceMs ?? 1000,
          ),
        );
      }, options.timeoutMs),
    );
    onAbort = () => {
      resolve(aborted());
      controller.abort(new ToolError('aborted', `tool ${tool.name} was cancelled`));
    };
    options.signal.addEventListener('abort', onAbort, { once: true });
  });
  // Wrapped so a synchronous throw is caught too; the catch also keeps a late rejection
  // (after a timeout) from becoming an unhandled rejection.
  const execution = Promise.resolve()
    .then(() =>
      tool.execute(args, {
        signal: controller.signal,
        timeoutMs: options.timeoutMs,
        scope: options.scope ?? null,
        options: options.options ?? {},
        credentials: options.credentials ?? noCredentials,
      }),
    )
    .then(
      (result): ToolOutcome => ({
        ok: true,
        result: truncateResult(result, options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES),
      }),
      (thrown: unknown) =>
        // A foreign error after the timeout fired is the abort surfacing: report the timeout.
        controller.signal.reason === timeout && !(thrown instanceof ToolError)
          ? failure(timeout)
          : fromThrown(tool, thrown),
    );
  try {
    return timed(await Promise.race([execution, stopped]));
  } finally {
    for (const timer of timers) clearTimeout(timer);
    if (onAbort) options.signal.removeEventListener('abort', onAbort);
  }
}

/**
 * Asks a tool's `reconcile` whether a call whose result is unknown took effect: `unknown`
 * when the tool has none, or when it throws or gives up at the call's time limit (its
 * context's signal aborts then; the same rule as a call's).
 */
export async function reconcileCall(
  tool: Tool,
  args: unknown,
  options: Omit<RunToolOptions, 'maxResultBytes' | 'graceMs'>,
): Promise<Reconciled> {
  if (!tool.reconcile) return 'unknown';
  const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)]);
  try {
    const found = await tool.reconcile(args, {
      signal,
      timeoutMs: options.timeoutMs,
      scope: options.scope ?? null,
      options: options.options ?? {},
      credentials: options.credentials ?? noCredentials,
    });
    return found === 'done' || found === 'not_done' ? found : 'unknown';
  } catch {
    return 'unknown';
  }
}
