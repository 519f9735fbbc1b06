import type { AgentLookup } from '../agents/lookup.js';
import { monotonicFactory } from 'ulid';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import type { Wakeups } from '../store/wakeups.js';
import { startDelivery } from './delivery/loop.js';
import { startDiscordGateway } from './discordGateway.js';
import { PlatformSet } from './platformSet.js';
import type { Env } from './platforms/types.js';

/** Outbox ids sort by creation, also within one millisecond: a thread's order rests on it. */
const nextUlid = monotonicFactory();

export interface PlatformsRunning {
  /** The configured platforms (null when there are none): the API's inbound endpoints. */
  set: PlatformSet | null;
  /** Called once the API listens at `url`: starts what needs the process's own address. */
  listening: (url: string) => void;
  stop: () => Promise<void>;
}

/**
 * The chat platforms' part of a process. The API role answers their inbound endpoints;
 * the worker role runs the delivery loop that sends the outbox (workers are the
 * processes that do work in the background, and there may be any number of them: the
 * outbox's leases keep them from sending one message twice).
 */
export async function startPlatforms(deps: {
  db: Db;
  wakeups: Wakeups;
  config: Config;
  env: Env;
  log: Logger;
  role: { api: boolean; worker: boolean };
  /** Agents as each tenant sees them (edits included); default: the configuration's. */
  agents?: AgentLookup;
}): Promise<PlatformsRunning> {
  const stops: (() => Promise<void>)[] = [];
  const set = new PlatformSet(deps.db, deps.config, deps.env, deps.log, deps.agents);
  if (set.size === 0) return { set: null, listening: () => {}, stop: async () => {} };
  stops.push(() => set.close());
  if (deps.role.worker) {
    const delivery = startDelivery({
      db: deps.db,
      wakeups: deps.wakeups,
      clients: set.clients,
      log: deps.log,
      pollMs: deps.config.runtime.pollMs,
      leaseMs: deps.config.runtime.leaseTtlMs,
      newId: () => `rep_${nextUlid()}`,
      initialize: () => set.initialize(),
    });
    stops.push(delivery.stop);
  }
  return {
    set,
    listening: (url) => {
      if (!deps.role.api || !deps.config.adapters.discord?.gateway) return;
      const webhookUrl = `${url}/adapters/discord/interactions`;
      const gateway = startDiscordGateway({
        state: set.state,
        run: (signal, durationMs) => set.runDiscordGateway(webhookUrl, signal, durationMs),
        log: deps.log,
      });
      stops.push(gateway.stop);
    },
    stop: async () => {
      for (const stop of stops.reverse()) await stop();
    },
  };
}
