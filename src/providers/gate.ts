import type { LanguageModelV3, LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import { forcedToolCall, type CallUsage } from './forcedCall.js';
import { classifyProviderError } from './failure.js';

/**
 * The scope gate (RUNTIME.md: "fail-closed: classifier error = off-topic"). A cheap model
 * classifies the folded burst against the agent's topic through a forced tool call, the
 * structured output every provider kind supports. Anything but a well-formed answer in
 * time — a provider error, a timeout, no call, unparsable arguments — is off-topic, with
 * the reason recorded, so a broken gate never lets an off-topic turn through.
 */
export const gateToolName = 'classify_topic';

export type GateUsage = CallUsage;

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
  const spent: { usage: GateUsage | null } = { usage: null };
  let answer: string | null;
  try {
    answer = await forcedToolCall(
      model,
      {
        system: gateInstructions(request.topic),
        user: request.input,
        tool: gateTool,
        signal,
        started,
        now,
      },
      spent,
    );
  } catch (error) {
    if (request.signal?.aborted) throw request.signal.reason;
    if (timeout.aborted) return failClosed(`timed out after ${request.timeoutMs} ms`, spent.usage);
    return failClosed(classifyProviderError(error, now).code, spent.usage);
  }
  if (request.signal?.aborted) throw request.signal.reason;
  if (timeout.aborted) return failClosed(`timed out after ${request.timeoutMs} ms`, spent.usage);
  if (answer === null) return failClosed('the model gave no verdict', spent.usage);
  const parsed = parseVerdict(answer);
  if (!parsed) return failClosed('the verdict was not understood', spent.usage);
  return { ...parsed, failed: false, usage: spent.usage };
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
