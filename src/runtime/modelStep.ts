import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import type { AgentConfig } from '../config/types.js';
import { classifyProviderError } from '../providers/failure.js';
import type { DeltaBuffer } from './deltaBuffer.js';

export { ProviderFailure, type ProviderFailureCode } from '../providers/failure.js';

/** The call settings an agent's configuration asks for (unset ones are left to the provider). */
export function agentCallSettings(agent: AgentConfig): CallSettings {
  return {
    ...(agent.temperature === null ? {} : { temperature: agent.temperature }),
    ...(agent.maxOutputTokens === null ? {} : { maxOutputTokens: agent.maxOutputTokens }),
    ...(Object.keys(agent.providerOptions).length > 0
      ? { providerOptions: agent.providerOptions as NonNullable<CallSettings['providerOptions']> }
      : {}),
  };
}

export interface StepResult {
  text: string;
  /** Choices the model offered with its reply (the built-in `offer_options` call). */
  options: string[] | null;
  /** Tool calls the model proposed (arguments parsed from JSON; unparsable → the raw text). */
  calls: { call_id: string; tool: string; arguments: unknown }[];
  /** Every input token, cached ones included. */
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the provider's prompt cache (priced apart). */
  cachedInputTokens: number;
  /** Output tokens spent on reasoning (part of `outputTokens`). */
  reasoningTokens: number;
  /** The reasoning text the provider streamed (never part of `text`). */
  reasoning: string;
  latencyMs: number;
  /** From the call's start to its first output (text, reasoning or a tool call); null if none. */
  ttftMs: number | null;
  /** The provider's finish reason, unified by the AI SDK (`stop`, `tool-calls`, `length`...). */
  finishReason: string;
  /** The model that answered and the response's id, when the provider says (telemetry). */
  responseModel: string | null;
  responseId: string | null;
}

/** Per-agent sampling settings and provider options, passed to the call unchanged. */
export type CallSettings = Pick<
  LanguageModelV3CallOptions,
  'temperature' | 'maxOutputTokens' | 'providerOptions' | 'toolChoice'
>;

/** Where a step's text goes: the runtime's DeltaBuffer (which journals it), or any sink. */
export type TextSink = Pick<DeltaBuffer, 'push'>;

export interface StepOptions {
  settings?: CallSettings;
  /** Reasoning text as it streams (the runtime journals it as `reasoning_delta`). */
  onReasoning?: (delta: string) => void;
  /** Every part that is output or a keep-alive (the progress watchdog watches these). */
  onProgress?: (progress: StreamProgress) => void;
  now?: () => number;
}

/**
 * What a stream part says about progress: `output` (text, reasoning, a tool call, a file
 * or source), `keep_alive` (a part with nothing in it: an empty delta, a raw chunk), or
 * null for the parts that frame the others (starts, ends, metadata, finish).
 */
export type StreamProgress = 'output' | 'keep_alive';

export function progressOf(part: LanguageModelV3StreamPart): StreamProgress | null {
  switch (part.type) {
    case 'text-delta':
    case 'reasoning-delta':
    case 'tool-input-delta':
      return part.delta.length > 0 ? 'output' : 'keep_alive';
    case 'tool-input-start':
    case 'tool-call':
    case 'tool-result':
    case 'file':
    case 'source':
      return 'output';
    case 'raw':
      return 'keep_alive';
    default:
      return null;
  }
}

/**
 * One streaming call to the model. Text deltas go to the buffer (which journals them; the
 * caller takes its tail into the statement that closes the step),
 * reasoning deltas to `onReasoning`, never into the reply; the whole text and usage come
 * back at the end. Aborting `signal` aborts the provider stream at once. Provider errors
 * are classified once (providers/failure.ts) and never carry the provider's body.
 */
export async function streamStep(
  model: LanguageModelV3,
  prompt: LanguageModelV3Prompt,
  buffer: TextSink,
  signal: AbortSignal,
  tools: LanguageModelV3FunctionTool[] = [],
  options: StepOptions = {},
): Promise<StepResult> {
  const now = options.now ?? Date.now;
  const started = now();
  let firstOutputAt: number | null = null;
  const sawOutput = () => {
    firstOutputAt ??= now();
  };
  let text = '';
  let reasoning = '';
  let finishReason = 'unknown';
  let finished = false;
  let responseModel: string | null = null;
  let responseId: string | null = null;
  let options_: string[] | null = null;
  const calls: StepResult['calls'] = [];
  let usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };
  try {
    const { stream } = await model.doStream({
      prompt,
      abortSignal: signal,
      ...definedSettings(options.settings),
      ...(tools.length > 0 ? { tools } : {}),
    });
    for await (const part of stream) {
      if (signal.aborted) break;
      if (options.onProgress) {
        const progress = progressOf(part);
        if (progress !== null) options.onProgress(progress);
      }
      if (part.type === 'text-delta') {
        if (part.delta.length === 0) continue;
        sawOutput();
        text += part.delta;
        buffer.push(part.delta);
      } else if (part.type === 'reasoning-delta') {
        if (part.delta.length === 0) continue;
        sawOutput();
        reasoning += part.delta;
        options.onReasoning?.(part.delta);
      } else if (part.type === 'tool-call' && part.toolName === offerOptionsTool) {
        sawOutput();
        options_ = parseOptions(part.input);
      } else if (part.type === 'tool-call') {
        sawOutput();
        calls.push({
          call_id: part.toolCallId,
          tool: part.toolName,
          arguments: parseArguments(part.input),
        });
      } else if (part.type === 'response-metadata') {
        responseModel = part.modelId ?? responseModel;
        responseId = part.id ?? responseId;
      } else if (part.type === 'error') {
        throw part.error;
      } else if (part.type === 'finish') {
        finished = true;
        finishReason = part.finishReason.unified;
        usage = {
          inputTokens: part.usage.inputTokens.total ?? 0,
          outputTokens: part.usage.outputTokens.total ?? 0,
          cachedInputTokens: part.usage.inputTokens.cacheRead ?? 0,
          reasoningTokens: part.usage.outputTokens.reasoning ?? 0,
        };
      }
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw classifyProviderError(error, now);
  }
  if (signal.aborted) throw signal.reason;
  // A stream that ends without its finish part was cut: what came so far is not a reply.
  if (!finished) throw classifyProviderError(new TypeError('terminated'), now);
  const ended = now();
  return {
    text,
    options: options_,
    calls,
    ...usage,
    reasoning,
    latencyMs: ended - started,
    ttftMs: firstOutputAt === null ? null : firstOutputAt - started,
    finishReason,
    responseModel,
    responseId,
  };
}

function definedSettings(settings: CallSettings | undefined): CallSettings {
  const defined: CallSettings = {};
  if (settings?.temperature !== undefined) defined.temperature = settings.temperature;
  if (settings?.maxOutputTokens !== undefined) defined.maxOutputTokens = settings.maxOutputTokens;
  if (settings?.providerOptions && Object.keys(settings.providerOptions).length > 0) {
    defined.providerOptions = settings.providerOptions;
  }
  if (settings?.toolChoice !== undefined) defined.toolChoice = settings.toolChoice;
  return defined;
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
