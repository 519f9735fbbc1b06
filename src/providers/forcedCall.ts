import type { LanguageModelV3, LanguageModelV3FunctionTool } from '@ai-sdk/provider';

/** What one structured call cost (billed like a model step). */
export interface CallUsage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  latencyMs: number;
}

/**
 * One model call forced to answer through `tool`: the structured output every provider
 * kind supports (the scope gate, gate.ts; a loop's evaluation, evaluator.ts). Returns the
 * call's raw arguments (null when the model made no such call); throws what the provider
 * threw. The usage lands in `spent` as soon as the stream reports it, so a caller that
 * catches a failure still bills what was spent.
 */
export async function forcedToolCall(
  model: LanguageModelV3,
  call: {
    system: string;
    user: string;
    tool: LanguageModelV3FunctionTool;
    signal: AbortSignal;
    started: number;
    now: () => number;
  },
  spent: { usage: CallUsage | null },
): Promise<string | null> {
  let answer: string | null = null;
  const { stream } = await model.doStream({
    prompt: [
      { role: 'system', content: call.system },
      { role: 'user', content: [{ type: 'text', text: call.user }] },
    ],
    tools: [call.tool],
    toolChoice: { type: 'tool', toolName: call.tool.name },
    temperature: 0,
    abortSignal: call.signal,
  });
  for await (const part of stream) {
    if (call.signal.aborted) break;
    if (part.type === 'tool-call' && part.toolName === call.tool.name) answer ??= part.input;
    else if (part.type === 'error') throw part.error;
    else if (part.type === 'finish') {
      spent.usage = {
        inputTokens: part.usage.inputTokens.total ?? 0,
        outputTokens: part.usage.outputTokens.total ?? 0,
        cachedInputTokens: part.usage.inputTokens.cacheRead ?? 0,
        reasoningTokens: part.usage.outputTokens.reasoning ?? 0,
        latencyMs: call.now() - call.started,
      };
    }
  }
  return answer;
}
