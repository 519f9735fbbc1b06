import type { FastifyRequest } from 'fastify';
import type { ParleyEvent } from '../../protocol/events.js';
import { whenClientGone } from '../clientGone.js';
import { JournalFollower } from '../journalFollower.js';
import type { A2aScope } from './scope.js';
import { TaskFold, type TaskIdentity } from './taskFold.js';

/** How long a fold waits: not at all, until the task ended or waits for input, until it ended. */
export type Until = 'now' | 'settled' | 'ended';

/**
 * Folds the journal from `from` into the task: `now` as it stands, `settled` once it
 * ended or waits for input, `ended` once it ended (at most `boundMs`, and only while the
 * `request`'s client is there). Every event in the journal is applied before a state is
 * judged, so a request answered later in the same read never counts as waiting.
 */
export async function foldTask(
  scope: A2aScope,
  identity: TaskIdentity,
  from: number,
  until: Until,
  request?: FastifyRequest,
  boundMs?: number,
): Promise<TaskFold> {
  const fold = new TaskFold(identity);
  const controller = new AbortController();
  const signal =
    boundMs === undefined
      ? controller.signal
      : AbortSignal.any([controller.signal, AbortSignal.timeout(boundMs)]);
  const unwatch = request ? whenClientGone(request, () => controller.abort()) : () => {};
  scope.open.add(controller);
  const follower = new JournalFollower(scope.deps.db, scope.feed, identity.contextId, from);
  const apply = (event: ParleyEvent) => fold.apply(event);
  const done = () => until === 'now' || (until === 'settled' ? fold.settled : fold.ended);
  try {
    await follower.drain(apply);
    while (!done()) if (!(await follower.take(signal, apply))) break;
  } finally {
    unwatch();
    follower.close();
    scope.open.delete(controller);
  }
  return fold;
}
