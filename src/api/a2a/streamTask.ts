import { StreamResponse, type Task } from '@a2a-js/sdk';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { whenClientGone } from '../clientGone.js';
import { JournalFollower } from '../journalFollower.js';
import { openEventStream } from '../sseResponse.js';
import { SseWriter } from '../sseWriter.js';
import type { RpcId } from './jsonRpc.js';
import type { A2aScope } from './scope.js';
import { TaskFold, type TaskIdentity } from './taskFold.js';
import { streamedInV03 } from './v03.js';

/**
 * Streams the task: the task first, then each update after it, until it ended (or,
 * `stopAtInput`, waits for input) or the client leaves. `fromStart`: the task as it was
 * admitted, then every update of its story (a send's stream, or its retry); otherwise the
 * task as it stands now, its reply so far included, then the updates after it (a
 * resubscribe, an answer). Either way no chunk comes twice: what came before the first
 * update sent is in the task the stream starts with.
 */
export async function streamTask(
  scope: A2aScope,
  request: FastifyRequest,
  reply: FastifyReply,
  id: RpcId,
  identity: TaskIdentity,
  from: number,
  how: { stopAtInput: boolean; fromStart: boolean; v03: boolean },
): Promise<void> {
  const { deps } = scope;
  const controller = new AbortController();
  scope.open.add(controller);
  const fold = new TaskFold(identity);
  const follower = new JournalFollower(deps.db, scope.feed, identity.contextId, from);
  const frame = (value: StreamResponse) => {
    const result = how.v03 ? streamedInV03(value, how.stopAtInput) : StreamResponse.toJSON(value);
    return `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`;
  };
  const done = () => fold.ended || (how.stopAtInput && fold.settled);
  let response: ReturnType<typeof openEventStream> | null = null;
  let stopKeepAlive = () => {};
  let unwatch = () => {};
  try {
    // The task before its first update (fromStart), else as it stands once caught up.
    let first: Task | null = null;
    await follower.drain((event) => {
      const before = fold.updates.length;
      const snapshot: Task | null = how.fromStart && first === null ? fold.snapshot() : null;
      fold.apply(event);
      if (snapshot && fold.updates.length > before) first = snapshot;
    });
    let sent = first === null ? fold.updates.length : 0;
    response = openEventStream(reply);
    unwatch = whenClientGone(request, () => controller.abort());
    const stream = new SseWriter(response, {
      keepaliveMs: deps.config.server.keepaliveMs,
      bufferBytes: deps.config.limits.streamBufferBytes,
      onDrop: () => controller.abort(),
    });
    stopKeepAlive = stream.keepAlive();
    stream.write(frame({ payload: { $case: 'task', value: first ?? fold.snapshot() } }));
    for (const update of fold.updates.slice(sent)) stream.write(frame(update));
    sent = fold.updates.length;
    while (!done() && !controller.signal.aborted) {
      if (!(await follower.take(controller.signal, (event) => fold.apply(event)))) break;
      for (const update of fold.updates.slice(sent)) stream.write(frame(update));
      sent = fold.updates.length;
    }
  } finally {
    unwatch();
    stopKeepAlive();
    follower.close();
    scope.open.delete(controller);
    if (response && !response.writableEnded) response.end();
  }
}
