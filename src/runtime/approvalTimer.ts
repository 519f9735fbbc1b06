import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import { expireDueRequests } from '../store/expireDueRequests.js';
import { nudgeDueRequests } from '../store/nudgeDueRequests.js';
import { msUntilNextDeadline } from '../store/msUntilNextDeadline.js';
import type { Wakeups } from '../store/wakeups.js';
import { startTimedLoop, type TimedLoop } from '../work/timedLoop.js';

/** Requests resolved per round before the loop runs the next one at once. */
const batch = 50;

/**
 * The approval timer (worker role), a kind of the engine's timed loop (src/work/
 * timedLoop.ts): each round resolves the requests whose deadline passed
 * (store/expireDueRequests.ts: their safe default, once, under the session's row lock),
 * then takes the escalations and reminders that fell due (store/nudgeDueRequests.ts,
 * likewise once), then sleeps until the next of either or the poll interval. A new
 * request — its `input_required` wake-up, from any process — ends the sleep, so the next
 * sleep is measured to it. Deadlines are rows, not timers in memory: after a crash or
 * a restart the first round resolves whatever fell due meanwhile.
 */
export function startApprovalTimer(deps: {
  db: Db;
  wakeups: Wakeups;
  log: Logger;
  pollMs: number;
}): TimedLoop {
  const loop = startTimedLoop({
    name: 'approval_deadlines',
    log: deps.log,
    pollMs: deps.pollMs,
    minSleepMs: 1,
    round: async () => {
      // Deadlines first: a request whose deadline passed is not escalated or reminded of.
      const resolved = await expireDueRequests(deps.db, { limit: batch });
      if (resolved > 0) deps.log.info({ requests: resolved }, 'approvals timed out');
      const nudged = await nudgeDueRequests(deps.db, { limit: batch });
      if (nudged > 0) deps.log.info({ nudges: nudged }, 'approvals escalated or reminded');
      if (resolved >= batch || nudged >= batch) return { again: true };
      return { dueMs: await msUntilNextDeadline(deps.db) };
    },
  });
  const unsubscribe = deps.wakeups.subscribe((wakeup) => {
    if (wakeup.kind !== 'events') return;
    // A wake-up too large to carry its events may hide a new deadline: look again.
    const events = wakeup.events();
    if (events === null || events.some((event) => event.type === 'input_required')) {
      loop.wake();
    }
  });
  return {
    wake: () => loop.wake(),
    stop: async () => {
      unsubscribe();
      await loop.stop();
    },
  };
}
