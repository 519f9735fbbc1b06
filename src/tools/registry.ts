import { calculator } from './calculator.js';
import { createClock } from './clock.js';
import { ToolError, type Tool } from './types.js';
import { validateArguments } from './validate.js';

export { validateArguments };

/** The tools every agent may be offered (subject to its policy). */
export function builtInTools(): Map<string, Tool> {
  const tools = [createClock(), calculator];
  return new Map(tools.map((tool) => [tool.name, tool]));
}

export type ToolOutcome =
  | { ok: true; result: unknown }
  | { ok: false; error: { code: ToolError['code']; message: string } };

export interface RunToolOptions {
  signal: AbortSignal;
  timeoutMs: number;
}

function failure(error: ToolError): ToolOutcome {
  return { ok: false, error: error.toBody() };
}

/** Maps anything a tool threw to a reportable outcome; foreign errors keep no detail. */
function fromThrown(tool: Tool, thrown: unknown): ToolOutcome {
  if (thrown instanceof ToolError) return failure(thrown);
  return failure(new ToolError('tool_failed', `tool ${tool.name} failed`));
}

/**
 * Validates and runs one call. Never throws for tool failures: invalid arguments, a
 * thrown error, a timeout or the caller's abort all come back as `{ ok: false }`. On
 * timeout or abort the execution is not killed, only no longer awaited; the signal the
 * tool received is aborted so a cooperative tool can stop early.
 */
export async function runTool(
  tool: Tool,
  args: unknown,
  options: RunToolOptions,
): Promise<ToolOutcome> {
  if (!(options.timeoutMs > 0) || !Number.isFinite(options.timeoutMs)) {
    throw new RangeError('timeoutMs must be a positive finite number');
  }
  const invalid = validateArguments(tool, args);
  if (invalid) return failure(invalid);
  const aborted = () => failure(new ToolError('aborted', `tool ${tool.name} was cancelled`));
  if (options.signal.aborted) return aborted();

  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<ToolOutcome>((resolve) => {
    timer = setTimeout(() => {
      resolve(
        failure(
          new ToolError(
            'timeout',
            `tool ${tool.name} did not finish within ${options.timeoutMs} ms; ` +
              'it may or may not have completed',
          ),
        ),
      );
      controller.abort();
    }, options.timeoutMs);
    onAbort = () => {
      resolve(aborted());
      controller.abort();
    };
    options.signal.addEventListener('abort', onAbort, { once: true });
  });
  // Wrapped so a synchronous throw is caught too; the catch also keeps a late rejection
  // (after a timeout) from becoming an unhandled rejection.
  const execution = Promise.resolve()
    .then(() => tool.execute(args, { signal: controller.signal }))
    .then(
      (result): ToolOutcome => ({ ok: true, result }),
      (thrown: unknown) => fromThrown(tool, thrown),
    );
  try {
    return await Promise.race([execution, stopped]);
  } finally {
    clearTimeout(timer);
    if (onAbort) options.signal.removeEventListener('abort', onAbort);
  }
}
