import type { LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import type { AgentConfig, EscalationStep } from '../config/types.js';
import type { MissionDeadline } from '../store/readMissionDeadline.js';
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
 * `approval_timeout_ms`, else the mission's (a turn of an execution), else the agent's;
 * `on_timeout` the entry's, else the mission's, `reject` by default: a call nobody
 * approved in time does not run. An entry's `on_timeout: approve` keeps the entry's or
 * the agent's deadline: a mission never makes an unapproved call run sooner than the
 * operator set. Its escalation chain and reminder: the entry's, else the agent's.
 */
export function approvalDeadline(
  agent: AgentConfig,
  tool: string,
  mission: MissionDeadline | null = null,
): ApprovalDeadline {
  const server = mcpToolPattern.exec(tool)?.[1];
  const entry = Object.hasOwn(agent.tools, tool)
    ? agent.tools[tool]
    : server !== undefined && Object.hasOwn(agent.tools, `${server}__*`)
      ? agent.tools[`${server}__*`]
      : undefined;
  const onTimeout = entry?.onTimeout ?? mission?.onTimeout ?? 'reject';
  const missionTimeoutMs = entry?.onTimeout === 'approve' ? null : mission?.approvalTimeoutMs;
  return {
    timeoutMs: entry?.approvalTimeoutMs ?? missionTimeoutMs ?? agent.approvalTimeoutMs,
    onTimeout,
    escalate: entry?.escalate ?? agent.escalate,
    remindBeforeMs: entry?.remindBeforeMs ?? agent.remindBeforeMs,
  };
}
