import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3FunctionTool,
  type LanguageModelV3Prompt,
} from '@ai-sdk/provider';
import type { DeltaBuffer } from './deltaBuffer.js';

export interface StepResult {
  text: string;
  /** Choices the model offered with its reply (the built-in `offer_options` call). */
  options: string[] | null;
  /** Tool calls the model proposed (arguments parsed from JSON; unparsable → the raw text). */
  calls: { call_id: string; tool: string; arguments: unknown }[];
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
}

/** A provider failure, classified once: retryable (429, 5xx, network) or permanent. */
export class ProviderFailure extends Error {
  constructor(
    readonly isRetryable: boolean,
    readonly statusCode: number | null,
  ) {
    super(
      isRetryable ? 'the model provider is unavailable' : 'the model provider refused the request',
    );
    this.name = 'ProviderFailure';
  }
}

/**
 * One streaming call to the model. Text deltas go to the buffer (which journals them; the
 * caller takes its tail into the statement that closes the step); the whole text and
 * usage come back at the end. Aborting `signal` aborts the provider
 * stream at once. Provider errors are classified and never carry the provider's body.
 */
export async function streamStep(
  model: LanguageModelV3,
  prompt: LanguageModelV3Prompt,
  buffer: DeltaBuffer,
  signal: AbortSignal,
  tools: LanguageModelV3FunctionTool[] = [],
): Promise<StepResult> {
  const started = Date.now();
  let text = '';
  let options: string[] | null = null;
  const calls: StepResult['calls'] = [];
  let inputTokens = 0;
  let outputTokens = 0;
  try {
    const { stream } = await model.doStream({
      prompt,
      abortSignal: signal,
      ...(tools.length > 0 ? { tools } : {}),
    });
    for await (const part of stream) {
      if (signal.aborted) break;
      if (part.type === 'text-delta') {
        text += part.delta;
        buffer.push(part.delta);
      } else if (part.type === 'tool-call' && part.toolName === offerOptionsTool) {
        options = parseOptions(part.input);
      } else if (part.type === 'tool-call') {
        calls.push({
          call_id: part.toolCallId,
          tool: part.toolName,
          arguments: parseArguments(part.input),
        });
      } else if (part.type === 'error') {
        throw part.error;
      } else if (part.type === 'finish') {
        inputTokens = part.usage.inputTokens.total ?? 0;
        outputTokens = part.usage.outputTokens.total ?? 0;
      }
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw classify(error);
  }
  if (signal.aborted) throw signal.reason;
  return { text, options, calls, inputTokens, outputTokens, latencyMs: Date.now() - started };
}

function parseArguments(input: string): unknown {
  try {
    return JSON.parse(input) as unknown;
  } catch {
    return input;
  }
}

/** The built-in way for a model to offer choices with its reply. */
export const offerOptionsTool = 'offer_options';

function parseOptions(input: string): string[] | null {
  try {
    const parsed = JSON.parse(input) as { options?: unknown };
    const choices = Array.isArray(parsed.options)
      ? parsed.options.filter((choice): choice is string => typeof choice === 'string')
      : [];
    return choices.length > 0 ? choices.slice(0, 20) : null;
  } catch {
    return null;
  }
}

function classify(error: unknown): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (APICallError.isInstance(error)) {
    return new ProviderFailure(error.isRetryable, error.statusCode ?? null);
  }
  const code = (error as { code?: unknown } | null)?.code;
  const network =
    typeof code === 'string' && /^(ECONN|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|UND_ERR)/.test(code);
  return new ProviderFailure(network, null);
}

/** Exponential backoff with full jitter: base·2^(n-1), randomised in [half, full]. */
export function backoffMs(baseMs: number, failedAttempts: number, random = Math.random): number {
  const ceiling = baseMs * 2 ** (failedAttempts - 1);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
