import type { LanguageModelV3FunctionTool, LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { AgentConfig } from '../config/types.js';
import type { BurstCall, BurstState } from '../store/types.js';
import { resolveAgentTools } from '../tools/registry.js';
import type { Tool } from '../tools/types.js';

/** The built-in question tool: the model asks the person, the answer is the tool result. */
export const askUserTool = 'ask_user';

/**
 * The tools an agent offers its model: its `allow` and `approve` tools that exist, plus
 * `ask_user` when listed. `deny` tools are not offered; if a model calls one anyway it is
 * told the tool is not allowed, and nothing runs.
 */
export function offeredTools(
  agent: AgentConfig,
  tools: Map<string, Tool>,
): LanguageModelV3FunctionTool[] {
  const offered: LanguageModelV3FunctionTool[] = [];
  for (const { name, tool, policy } of resolveAgentTools(agent, tools)) {
    if (policy === 'deny') continue;
    if (name === askUserTool) {
      offered.push({
        type: 'function',
        name,
        description: 'Ask the person a question and wait for the answer.',
        inputSchema: {
          type: 'object',
          properties: { question: { type: 'string' } },
          required: ['question'],
          additionalProperties: false,
        },
      });
      continue;
    }
    if (tool) {
      offered.push({
        type: 'function',
        name,
        description: tool.description,
        inputSchema: tool.inputSchema,
      });
    }
  }
  return offered;
}

/** The policy of a call the model proposed (unknown tools are denied). */
export function policyOf(
  agent: AgentConfig,
  tools: Map<string, Tool>,
  tool: string,
): BurstCall['policy'] {
  const entry = resolveAgentTools(agent, tools).find((resolved) => resolved.name === tool);
  if (entry === undefined) return 'deny';
  if (tool !== askUserTool && !entry.tool) return 'deny';
  return entry.policy;
}

/** Whether a call still needs something before the model can go on. */
export function isOpen(call: BurstCall): boolean {
  return ['pending', 'awaiting', 'approved', 'running'].includes(call.status);
}

/**
 * The model's view of a burst in progress: the base prompt, then per step the model's
 * text and calls and the calls' results, and inputs folded in later as user messages.
 */
export function continuePrompt(
  base: LanguageModelV3Prompt,
  burst: BurstState,
): LanguageModelV3Prompt {
  const prompt = [...base];
  for (const step of burst.steps) {
    if (step.kind === 'input') {
      // A budget extension is between the runtime and a person: the model never sees it.
      if (step.text) prompt.push({ role: 'user', content: [{ type: 'text', text: step.text }] });
      continue;
    }
    prompt.push({
      role: 'assistant',
      content: [
        ...(step.text ? [{ type: 'text' as const, text: step.text }] : []),
        ...step.calls.map((call) => ({
          type: 'tool-call' as const,
          toolCallId: call.call_id,
          toolName: call.tool,
          input: call.arguments,
        })),
      ],
    });
    if (step.calls.length > 0) {
      prompt.push({
        role: 'tool',
        content: step.calls.map((call) => ({
          type: 'tool-result' as const,
          toolCallId: call.call_id,
          toolName: call.tool,
          output:
            call.status === 'done'
              ? { type: 'json' as const, value: (call.result ?? null) as never }
              : { type: 'error-text' as const, value: resultText(call) },
        })),
      });
    }
  }
  return prompt;
}

/** What the model is told for a call that did not return a result. */
export function resultText(call: BurstCall): string {
  if (call.error) return call.error.message;
  return `the call of ${call.tool} did not run`;
}

/** The whole visible reply of a burst: the text of every model step. */
export function replyText(burst: BurstState, last: string): string {
  return [...burst.steps.filter((step) => step.kind === 'model').map((step) => step.text), last]
    .filter((text) => text.trim().length > 0)
    .join('\n\n');
}
