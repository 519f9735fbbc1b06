import type { AgentConfig, Principal } from '../config/types.js';

/**
 * Does this principal's post run a turn of the agent (`trigger_roles`, PROTOCOL.md §2)?
 * An agent without trigger_roles is triggered by everyone; otherwise the principal needs
 * one of them. The wildcard role `*` passes only when the operator says so
 * (`tenancy.wildcard_triggers`): reviewer-only gating must not be bypassed by a key that
 * merely holds every role. The API and the chat platforms decide it here.
 */
export function triggersTurns(
  agent: AgentConfig,
  principal: Principal,
  wildcardTriggers: boolean,
): boolean {
  if (agent.triggerRoles === null) return true;
  if (wildcardTriggers && principal.roles.includes('*')) return true;
  return principal.roles.some((role) => agent.triggerRoles?.includes(role));
}
