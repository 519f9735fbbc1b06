import type { Principal } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import { agentsOf, type ApiDeps } from '../deps.js';
import { findVisibleTurn } from '../sessionAccess.js';
import type { TaskIdentity } from './taskFold.js';

/** A task, and the journal position its story starts after (its admission's event). */
export interface FoundTask {
  identity: TaskIdentity;
  from: number;
}

/** A task by its id: a turn of this agent that the principal may see (else as missing). */
export async function taskOf(
  deps: ApiDeps,
  principal: Principal,
  agent: string,
  taskId: string,
): Promise<FoundTask> {
  const found = await findVisibleTurn(deps, principal, taskId);
  if (!found || found.session.agent !== agent) {
    throw new ParleyError('turn_not_found', `no task "${taskId}"`);
  }
  const { place } = found;
  return {
    identity: { taskId, contextId: place.session_id },
    from: place.admitted_sequence - 1,
  };
}

/** The principal's tenant's agent of that name (else `unknown_agent`). */
export function agentOf(deps: ApiDeps, principal: Principal, name: string) {
  const agent = agentsOf(deps).get(principal.tenant, name);
  if (!agent) throw new ParleyError('unknown_agent', `no agent named "${name}"`);
  return agent;
}
