import type { StateAdapter } from 'chat';
import type { Logger } from '../log.js';
import { abortableDelay } from '../time/abortable.js';

/** Runs one Gateway session until `signal` aborts or `durationMs` passes. */
export type GatewayRunner = (signal: AbortSignal, durationMs: number) => Promise<void>;

export interface GatewayDeps {
  state: StateAdapter;
  run: GatewayRunner;
  log: Logger;
  /** The leadership lock's time to live; it is renewed at a third of it. */
  lockTtlMs?: number;
  /** How long one Gateway session lasts before it is reopened. */
  sessionMs?: number;
}

const lockKey = 'parley:discord-gateway';

/**
 * Discord sends channel messages only over its Gateway (a websocket), never to an HTTP
 * endpoint. With `gateway: true` one process at a time holds that connection: the
 * leader is whoever holds a lock in the SDK's state (chat_state_locks, shared by every
 * process), renewed while the session runs; a process that loses it (paused past its
 * ttl, its database gone) ends its session, and another takes over. States: `waiting`
 * (not the leader: retries after a third of the ttl), `leading` (one Gateway session,
 * reopened when it ends), `stopped`.
 */
export function startDiscordGateway(deps: GatewayDeps): { stop: () => Promise<void> } {
  const ttl = deps.lockTtlMs ?? 60_000;
  const sessionMs = deps.sessionMs ?? 10 * 60_000;
  const stopped = new AbortController();
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      let lock;
      try {
        lock = await deps.state.acquireLock(lockKey, ttl);
      } catch (error) {
        deps.log.warn({ err: (error as Error).message }, 'Discord Gateway lock unavailable');
      }
      if (!lock) {
        await abortableDelay(ttl / 3, stopped.signal);
        continue;
      }
      const session = new AbortController();
      const held = lock;
      const renewals = (async () => {
        for (;;) {
          await abortableDelay(ttl / 3, AbortSignal.any([session.signal, stopped.signal]));
          if (session.signal.aborted || stopped.signal.aborted) return;
          const renewed = await deps.state.extendLock(held, ttl).catch(() => false);
          if (!renewed) {
            deps.log.warn('Discord Gateway leadership lost; closing the session');
            session.abort();
            return;
          }
        }
      })();
      const began = Date.now();
      try {
        await deps.run(AbortSignal.any([session.signal, stopped.signal]), sessionMs);
      } catch (error) {
        deps.log.warn({ err: (error as Error).message }, 'Discord Gateway session failed');
      } finally {
        session.abort();
        await renewals;
      }
      // A session that ended at once (a refused login, no network) is not retried in a
      // tight loop: the leader waits, still holding the lock, then tries again.
      if (Date.now() - began < 10_000) await abortableDelay(ttl / 3, stopped.signal);
      await deps.state.releaseLock(held).catch(() => {});
    }
  })();
  return {
    stop: async () => {
      stopped.abort();
      await loop;
    },
  };
}
