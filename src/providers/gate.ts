import type { LanguageModelV3, LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import { classifyProviderError } from './failure.js';

/**
 * The scope gate (RUNTIME.md: "fail-closed: classifier error = off-topic"). A cheap model
 * classifies the folded burst against the agent's topic through a forced tool call, the
 * structured output every provider kind supports. Anything but a well-formed answer in
 * time — a provider error, a timeout, no call, unparsable arguments — is off-topic, with
 * the reason recorded, so a broken gate never lets an off-topic turn through.
 */
export const gateToolName = 'classify_topic';

export interface GateUsage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  latencyMs: number;
}

export interface GateVerdict {
  on_topic: boolean;
  /** The model's reason, or why the gate failed (`gate failed: ...`): never provider text. */
  reason: string;
  /** True when the verdict is the fail-closed default rather than the model's answer. */
  failed: boolean;
  /** The gate call's tokens (billed to the turn); null when the call returned none. */
  usage: GateUsage | null;
}

export interface GateRequest {
  topic: string;
  /** The folded burst, as the main model would read it. */
  input: string;
  timeoutMs: number;
  /** The turn's own abort (cancel, lease lost): rethrown, never turned into a verdict. */
  signal?: AbortSignal;
  now?: () => number;
}

const gateTool: LanguageModelV3FunctionTool = {
  type: 'function',
  name: gateToolName,
  description: 'Record whether the message is within the assistant topic.',
  inputSchema: {
    type: 'object',
    properties: {
      on_topic: { type: 'boolean', description: 'true if the message is within the topic' },
      reason: { type: 'string', description: 'one short sentence' },
    },
    required: ['on_topic', 'reason'],
    additionalProperties: false,
  },
};

export function gateInstructions(topic: string): string {
  return [
    'You are a scope classifier. You never answer the message itself.',
    `The assistant's topic: ${topic}`,
    `Call ${gateToolName} with on_topic true if the message belongs to that topic (greetings and follow-ups to an on-topic conversation count), else false, and a one-sentence reason.`,
  ].join('\n');
}

export async function classifyTopic(
  model: LanguageModelV3,
  request: GateRequest,
): Promise<GateVerdict> {
  const now = request.now ?? Date.now;
  const started = now();
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
  let usage: GateUsage | null = null;
  let answer: string | null = null;
  try {
    const { stream } = await model.doStream({
      prompt: [
        { role: 'system', content: gateInstructions(request.topic) },
        { role: 'user', content: [{ type: 'text', text: request.input }] },
      ],
      tools: [gateTool],
      toolChoice: { type: 'tool', toolName: gateToolName },
      temperature: 0,
      abortSignal: signal,
    });
    for await (const part of stream) {
      if (signal.aborted) break;
      if (part.type === 'tool-call' && part.toolName === gateToolName) answer ??= part.input;
      else if (part.type === 'error') throw part.error;
      else if (part.type === 'finish') {
        usage = {
          inputTokens: part.usage.inputTokens.total ?? 0,
          outputTokens: part.usage.outputTokens.total ?? 0,
          cachedInputTokens: part.usage.inputTokens.cacheRead ?? 0,
          reasoningTokens: part.usage.outputTokens.reasoning ?? 0,
          latencyMs: now() - started,
        };
      }
    }
  } catch (error) {
    if (request.signal?.aborted) throw request.signal.reason;
    if (timeout.aborted) return failClosed(`timed out after ${request.timeoutMs} ms`, usage);
    return failClosed(classifyProviderError(error, now).code, usage);
  }
  if (request.signal?.aborted) throw request.signal.reason;
  if (timeout.aborted) return failClosed(`timed out after ${request.timeoutMs} ms`, usage);
  if (answer === null) return failClosed('the model gave no verdict', usage);
  const parsed = parseVerdict(answer);
  if (!parsed) return failClosed('the verdict was not understood', usage);
  return { ...parsed, failed: false, usage };
}

function failClosed(why: string, usage: GateUsage | null): GateVerdict {
  return { on_topic: false, reason: `gate failed: ${why}`, failed: true, usage };
}

function parseVerdict(input: string): { on_topic: boolean; reason: string } | null {
  try {
    const value = JSON.parse(input) as { on_topic?: unknown; reason?: unknown };
    if (typeof value.on_topic !== 'boolean') return null;
    const reason = typeof value.reason === 'string' ? value.reason.slice(0, 500) : '';
    return { on_topic: value.on_topic, reason };
  } catch {
    return null;
  }
}
