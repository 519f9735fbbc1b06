import { newLeaseToken } from '../ids.js';
import type { SessionHandoff, SessionSlot } from '../store/admitTurn.js';
import { claimSessions, type ClaimedSession } from '../store/claimSession.js';
import { ClaimLoop, claimLoopOptions, type ClaimKind } from '../work/claimLoop.js';
import { historyBytesFor, modelInfoOf, unknownModel } from './basePrompt.js';
import type { RuntimeDeps } from './deps.js';
import { drainSession, maxBurst } from './drain.js';

/**
 * Sessions as a kind of the engine's leased work (src/work/claimLoop.ts): a claim takes
 * the oldest sessions with queued input (up to the free capacity), each under a fresh lease token, the handler drains it
 * (bursts of turns, heartbeat, token-gated commits) and gives the lease back. An `input`
 * wake-up claims at once.
 */
export function sessionKind(deps: RuntimeDeps): ClaimKind<ClaimedSession> {
  const { runtime } = deps.config;
  return {
    name: 'sessions',
    capacity: runtime.maxParallelTurns,
    claim: (limit) =>
      claimSessions(
        deps.db,
        {
          tokens: Array.from({ length: limit }, newLeaseToken),
          owner: deps.owner,
          ttlMs: runtime.leaseTtlMs,
          maxTurns: maxBurst,
        },
        // The claim starts a fresh burst itself where agents come from stored definitions
        // (a directory): it records their stored revision, as startAttempt would.
        deps.agents?.revision ? { parkAfterAttempts: runtime.parkAfterAttempts } : undefined,
      ),
    onWakeup: (wakeup, wake) => {
      if (wakeup.kind === 'input') wake();
    },
    handle: (claimed, control) => drainSession(deps, claimed, control),
    describe: (claimed) => ({ session_id: claimed.session_id }),
  };
}

/** The worker role's claim loop of sessions (see `ClaimLoop` for its states). */
export class Worker extends ClaimLoop<ClaimedSession> implements SessionHandoff {
  constructor(private readonly deps: RuntimeDeps) {
    super(sessionKind(deps), claimLoopOptions(deps));
  }

  /**
   * A free slot for a session admitted in this process, which the admission claims itself:
   * the turn starts without a wake-up, a claim statement and its commit. Only where the
   * claim loop would start a fresh burst itself (agents from stored definitions).
   */
  reserveSession(tenant: string): SessionSlot | null {
    const { deps } = this;
    const agents = deps.agents;
    if (!agents?.revision) return null;
    const slot = this.reserve();
    if (!slot) return null;
    // The history window of whichever of the tenant's agents the session has: the widest.
    let bytes = historyBytesFor(unknownModel);
    for (const agent of agents.list(tenant)) {
      bytes = Math.max(bytes, historyBytesFor(modelInfoOf(deps, agent)));
    }
    return {
      claim: {
        token: newLeaseToken(),
        owner: deps.owner,
        ttlMs: deps.config.runtime.leaseTtlMs,
        parkAfterAttempts: deps.config.runtime.parkAfterAttempts,
        maxTurns: maxBurst,
        history: { limit: deps.config.runtime.historyMessages, bytes },
      },
      adopt: (session) => slot.adopt(session),
      release: () => slot.release(),
    };
  }

  get activeSessions(): number {
    return this.size;
  }
}
