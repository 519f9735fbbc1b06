import type { AgentConfig } from '../config/types.js';
import { mcpToolPattern } from './registry.js';

/** Does the operator's `tools.human_only` name this tool (by name, or `server__*`)? */
export function listedHumanOnly(humanOnly: readonly string[], tool: string): boolean {
  const server = mcpToolPattern.exec(tool)?.[1];
  return humanOnly.includes(tool) || (server !== undefined && humanOnly.includes(`${server}__*`));
}

/**
 * Whether only a person may answer an approval of this agent's call of `tool`: the
 * operator lists it (`tools.human_only`), or the agent's entry for it (or for its server,
 * `server__*`) says `human_only: true`. An agent answering another agent's requests
 * (missions' `interrupt_to: agent:NAME`) never answers these.
 */
export function isHumanOnly(
  agent: AgentConfig,
  tool: string,
  operatorList: readonly string[],
): boolean {
  if (listedHumanOnly(operatorList, tool)) return true;
  const server = mcpToolPattern.exec(tool)?.[1];
  const entries = [
    Object.hasOwn(agent.tools, tool) ? agent.tools[tool] : undefined,
    server !== undefined && Object.hasOwn(agent.tools, `${server}__*`)
      ? agent.tools[`${server}__*`]
      : undefined,
  ];
  return entries.some((entry) => entry?.humanOnly === true);
}
