import { agentFor } from '../agents/lookup.js';
import type { AgentConfig } from '../config/types.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import type { Lease } from '../store/types.js';
import type { RuntimeDeps } from './deps.js';

/** The agent a burst runs with, and what `turn_started` journals about it. */
export interface PinnedAgent {
  /** undefined: no such agent (or refused): the turn ends with an error. */
  agent: AgentConfig | undefined;
  /** Recorded on the burst's turns by startAttempt (null: no stored definitions). */
  revision: number | null;
  /** The revision the turn had recorded but that could not be loaded, else null. */
  unpinned: number | null;
}

/**
 * A turn runs with the agent revision it started with: an admin's edit or a deploy
 * applies from the next turn, never halfway through one. The first turn of the burst that
 * recorded a revision (started before: a resume after a person answered, a pivot, a new
 * attempt after a crash on another worker; or named at admission) decides it; a fresh
 * burst takes the current revision. A recorded revision that can no longer be loaded (a
 * deploy removed what it needs) does not stop the turn: it continues with the current
 * one, and `turn_started` says which revision it could not keep (`unpinned_revision`).
 */
export async function pinnedAgent(
  deps: RuntimeDeps,
  lease: Lease,
  name: string,
  turns: QueuedTurn[],
): Promise<PinnedAgent> {
  const current = agentFor(deps, lease.tenant, name);
  const currentRevision = deps.agents?.revision?.(lease.tenant, name) ?? null;
  const recorded = turns.find((turn) => turn.agent_revision != null)?.agent_revision ?? null;
  if (recorded === null || recorded === currentRevision || !deps.agents?.pinned) {
    return { agent: current, revision: currentRevision, unpinned: null };
  }
  const kept = await deps.agents.pinned(lease.tenant, name, recorded);
  if (kept) return { agent: kept, revision: recorded, unpinned: null };
  deps.log.warn(
    {
      session_id: lease.sessionId,
      agent: name,
      recorded_revision: recorded,
      agent_revision: currentRevision,
    },
    'the revision this turn started with can no longer be loaded; it continues with the current one',
  );
  return { agent: current, revision: currentRevision, unpinned: recorded };
}
