import type { LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import type { AgentConfig, EscalationStep } from '../config/types.js';
import type { BurstCall } from '../store/types.js';
import { askUserTool, mcpToolPattern, resolveAgentTools } from '../tools/registry.js';
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

/** What an approval of a call waits for: its deadline and what applies when it passes. */
export interface ApprovalDeadline {
  /** Milliseconds from the request to its deadline; null: it waits for ever. */
  timeoutMs: number | null;
  onTimeout: 'reject' | 'approve';
  /** Who else it goes to while it waits, and when. */
  escalate: EscalationStep[];
  /** A reminder this long before the deadline; null: none. */
  remindBeforeMs: number | null;
}

/**
 * The deadline of an approval of `tool`: its entry's (or its server's `server__*` entry's)
 * `approval_timeout_ms`, else the agent's; `on_timeout` from the same entry, `reject` by
 * default: a call nobody approved in time does not run. Its escalation chain and reminder
 * likewise: the entry's, else the agent's.
 */
export function approvalDeadline(agent: AgentConfig, tool: string): ApprovalDeadline {
  const server = mcpToolPattern.exec(tool)?.[1];
  const entry = Object.hasOwn(agent.tools, tool)
    ? agent.tools[tool]
    : server !== undefined && Object.hasOwn(agent.tools, `${server}__*`)
      ? agent.tools[`${server}__*`]
      : undefined;
  return {
    timeoutMs: entry?.approvalTimeoutMs ?? agent.approvalTimeoutMs,
    onTimeout: entry?.onTimeout ?? 'reject',
    escalate: entry?.escalate ?? agent.escalate,
    remindBeforeMs: entry?.remindBeforeMs ?? agent.remindBeforeMs,
  };
}
