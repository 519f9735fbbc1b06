import type { LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import type { AgentConfig } from '../config/types.js';
import type { BurstCall } from '../store/types.js';
import { askUserTool, resolveAgentTools } from '../tools/registry.js';
import type { Tool } from '../tools/types.js';

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
