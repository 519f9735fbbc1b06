import type { Config } from '../config/types.js';
import type { BufferedEffect } from '../store/types.js';
import { MemoryEffects } from './memory/effects.js';
import { workspaceDir } from './shell/workspace.js';
import type { CallScope } from './types.js';

/**
 * The scope of one call, as the runtime builds it for each call of a turn. `memory` is
 * the turn's buffer, shared by all its calls: pass the same object (or one rebuilt from
 * the effects saved with the burst, `new MemoryEffects(saved)`) so recall sees what the
 * turn remembered, and the commit applies exactly what was buffered.
 */
export function callScope(
  config: Pick<Config, 'tools'>,
  call: {
    tenant: string;
    agent: string;
    user: string;
    sessionId: string;
    callId: string;
    turnId?: string;
    memory: MemoryEffects | readonly BufferedEffect[];
  },
): CallScope {
  return {
    tenant: call.tenant,
    agent: call.agent,
    user: call.user,
    sessionId: call.sessionId,
    callId: call.callId,
    ...(call.turnId === undefined ? {} : { turnId: call.turnId }),
    workspaceDir: workspaceDir(config.tools.workspaceDir, call.tenant, call.sessionId),
    memory: call.memory instanceof MemoryEffects ? call.memory : new MemoryEffects(call.memory),
  };
}
