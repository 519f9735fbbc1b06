import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { JournalFeed } from '../feed.js';

/**
 * What the A2A routes share: the API's dependencies, one journal feed for every wait and
 * stream of the plugin, and the waits and streams open now (aborted when the app closes).
 */
export interface A2aScope {
  readonly deps: ApiDeps;
  readonly feed: JournalFeed;
  readonly open: Set<AbortController>;
}

/** The scope of one app: its feed stops, and its waits and streams end, when the app closes. */
export function openA2aScope(app: FastifyInstance, deps: ApiDeps): A2aScope {
  const scope: A2aScope = {
    deps,
    feed: new JournalFeed(deps.db, deps.wakeups, deps.config.runtime.pollMs),
    open: new Set(),
  };
  app.addHook('onClose', async () => {
    scope.feed.stop();
    for (const controller of scope.open) controller.abort();
  });
  return scope;
}
