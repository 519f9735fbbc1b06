import type { AdapterPostableMessage } from 'chat';
import type { Logger } from '../../log.js';
import { deadline, DeadlineError } from '../../time/abortable.js';
import type { ClaimedReply } from '../../store/claimReplies.js';
import type { Db } from '../../store/db.js';
import { postedMessageIds } from '../../store/postedMessageIds.js';
import { recordReplyFailed, recordReplySent } from '../../store/recordReply.js';
import type { PlatformClient } from '../platforms/types.js';
import type { ReplyContent, ReplyText } from './content.js';
import { render } from './render.js';
import { backoffMs } from '../../time/backoff.js';

export interface SenderDeps {
  db: Db;
  clients: ReadonlyMap<string, PlatformClient>;
  log: Logger;
  /** Random in [0, 1): the backoff's jitter. Injected for tests. */
  random?: () => number;
}

/** Slack's stream bookkeeping on the row: what the open stream has been given. */
interface StreamState {
  mode: 'native' | 'edit';
  sent: string;
}

/** Runs one platform call under the delivery's deadline. */
type Within = <T>(call: (signal: AbortSignal) => Promise<T>) => Promise<T>;

/**
 * Delivers one claimed outbox row: posts it (the first time) or edits its message to the
 * latest content, then records what the platform confirmed. The delivery's platform calls
 * share one deadline, the adapter's `timeout_ms` (at most two thirds of the sender's
 * lease, so the delivery ends before the lease does), which aborts their HTTP requests:
 * a call that gets no answer in time ends there and the delivery counts as failed. A
 * failure is recorded with a backoff (the platform's retry-after for a rate limit) and
 * tried again, across restarts; after the adapter's last attempt the row is dead.
 *
 * A failed post may still have reached the platform (the answer, not the request, was
 * lost), and so may the post of a sender killed before it recorded the outcome. Before
 * such a row posts again, a platform that can be read back is asked for the
 * message that post made (`findPosted`); found, it is edited instead of posting a second.
 */
export async function deliverReply(deps: SenderDeps, row: ClaimedReply, token: string) {
  const client = deps.clients.get(row.adapter);
  if (!client) return;
  const content = row.content as unknown as ReplyContent;
  const { retryBaseMs, maxAttempts, editIntervalMs, timeoutMs } = client.config;
  const within: Within = deadline(timeoutMs).run;
  let stream = (row.stream as StreamState | null) ?? null;
  let messageId = row.platform_message_id;
  try {
    // An earlier attempt that failed, or whose sender died before recording anything, may
    // have posted all the same.
    if (messageId === null && (row.attempts > 0 || row.interrupted) && client.findPosted) {
      const found = await findLostPost(deps, client, row, within);
      if (found !== null) {
        messageId = found;
        if (client.stream) stream = { mode: 'edit', sent: '' };
      }
    }
    if (
      client.stream?.available(row.thread_id, recipientOf(row)) &&
      content.type === 'reply' &&
      stream?.mode !== 'edit'
    ) {
      // After a failed or interrupted delivery, what the stream shows is not known: an
      // append may have reached Slack without its answer, and sending it again would show
      // its text twice. The message is then rewritten whole (edits) instead.
      const unsure = row.attempts > 0 || row.interrupted;
      const streamed = await streamReply(deps.log, within, client, row, content, stream, unsure);
      messageId = streamed.messageId;
      stream = streamed.stream;
    } else {
      const message = render(row.reply_id, content, {
        textInCard: !(client.name === 'gchat' && messageId !== null),
      });
      if (message !== null) {
        const shown = messageId;
        messageId =
          shown === null
            ? await within((signal) => client.post(row.thread_id, message, row.reply_id, signal))
            : (await within((signal) => client.edit(row.thread_id, shown, message, signal)), shown);
      }
    }
    await recordReplySent(deps.db, {
      replyId: row.reply_id,
      token,
      version: row.version,
      messageId,
      stream,
      nextAfterMs: editIntervalMs,
    });
  } catch (error) {
    // A post the deadline cut short may still be carried out (the platform took the
    // request; its work, not only its answer, came late). The next attempt reads the
    // thread back for it, so it waits one more deadline first: read back at once, a post
    // the platform makes late is not there yet, and the row posts a second.
    const backoff = retryDelay(error, row.attempts, retryBaseMs, deps.random ?? Math.random);
    const unanswered = messageId === null && error instanceof DeadlineError;
    const delay = unanswered ? Math.max(backoff, timeoutMs) : backoff;
    deps.log.warn(
      {
        adapter: row.adapter,
        reply_id: row.reply_id,
        attempt: row.attempts + 1,
        err: describe(error),
      },
      'platform delivery failed; retrying',
    );
    await recordReplyFailed(deps.db, {
      replyId: row.reply_id,
      token,
      error: describe(error),
      nextAfterMs: delay,
      maxAttempts,
      ...(stream === null ? {} : { stream }),
    });
  }
}

/**
 * The message an earlier, failed post of the row made, read back from the platform. A
 * platform that refuses the read (Slack without the history scope of the channel) cannot
 * tell: the row posts again, and the log says that it may show twice. A read that fails
 * otherwise fails the attempt, to be tried again.
 */
async function findLostPost(
  deps: SenderDeps,
  client: PlatformClient,
  row: ClaimedReply,
  within: Within,
): Promise<string | null> {
  const known = await postedMessageIds(deps.db, row.session_id);
  const lost = { key: row.reply_id, since: row.created_at, known };
  try {
    const found = await within(
      async (signal) => (await client.findPosted?.(row.thread_id, lost, signal)) ?? null,
    );
    if (found !== null) {
      deps.log.info(
        { adapter: row.adapter, reply_id: row.reply_id },
        'an earlier post of this message reached the platform; editing it',
      );
    }
    return found;
  } catch (error) {
    if (!isPlatformRefusal(error)) throw error;
    deps.log.warn(
      { adapter: row.adapter, reply_id: row.reply_id, err: describe(error) },
      'the thread cannot be read back: posting again, the message may show twice',
    );
    return null;
  }
}

/**
 * A reply through the platform's own streaming (Slack): the first text starts the
 * stream, later text is appended, the end stops it. Text that no longer extends what was
 * sent (an `attempt_reset`), an ending with more than text (options, an error), or a
 * stream whose last append may or may not have been applied (`unsure`: an append is not
 * idempotent) stops the stream and edits the message to the full content; so does any
 * refusal of the streaming calls, after which the reply continues with edits.
 */
async function streamReply(
  log: Logger,
  within: Within,
  client: PlatformClient,
  row: ClaimedReply,
  reply: ReplyText,
  state: StreamState | null,
  unsure: boolean,
): Promise<{ messageId: string | null; stream: StreamState }> {
  const native = client.stream as NonNullable<PlatformClient['stream']>;
  const recipient = recipientOf(row);
  const key = row.reply_id;
  let messageId = row.platform_message_id;
  const post = (message: AdapterPostableMessage) =>
    within((signal) => client.post(row.thread_id, message, key, signal));
  const toEdits = async (): Promise<{ messageId: string | null; stream: StreamState }> => {
    const shown = messageId;
    if (shown !== null) {
      await within((signal) => native.stop(row.thread_id, shown, key, signal)).catch(() => {});
      const message = render(key, reply);
      if (message !== null) {
        await within((signal) => client.edit(row.thread_id, shown, message, signal));
      }
    }
    return { messageId, stream: { mode: 'edit', sent: '' } };
  };
  const ended = reply.status !== 'streaming';
  try {
    if (messageId === null) {
      if (ended) {
        // Nothing streamed before the turn ended: the whole reply is one post.
        const message = render(key, reply);
        if (message !== null) messageId = await post(message);
        return { messageId, stream: { mode: 'edit', sent: '' } };
      }
      if (reply.text === '') return { messageId, stream: state ?? { mode: 'native', sent: '' } };
      messageId = await within((signal) =>
        native.start(row.thread_id, reply.text, recipient, signal),
      );
      state = { mode: 'native', sent: reply.text };
    } else if (!unsure && state !== null && reply.text.startsWith(state.sent)) {
      const more = reply.text.slice(state.sent.length);
      const shown = messageId;
      if (more !== '') {
        await within((signal) => native.append(row.thread_id, shown, more, signal));
      }
      state = { mode: 'native', sent: reply.text };
    } else {
      return await toEdits();
    }
    if (!ended) return { messageId, stream: state };
    if (reply.status === 'done' && !reply.options) {
      const shown = messageId;
      await within((signal) => native.stop(row.thread_id, shown, key, signal));
      return { messageId, stream: { mode: 'edit', sent: reply.text } };
    }
    return await toEdits();
  } catch (error) {
    if (!isPlatformRefusal(error)) throw error;
    log.warn(
      { adapter: row.adapter, err: describe(error) },
      'native streaming refused; using edits',
    );
    if (messageId === null) {
      const message = render(key, reply);
      if (message === null) return { messageId, stream: { mode: 'edit', sent: '' } };
      messageId = await post(message);
      return { messageId, stream: { mode: 'edit', sent: '' } };
    }
    return await toEdits();
  }
}

/** Who a streamed reply is for: the author (and workspace) of the message that ran the turn. */
function recipientOf(row: ClaimedReply) {
  return {
    userId: typeof row.context.user_id === 'string' ? row.context.user_id : null,
    teamId: typeof row.context.team_id === 'string' ? row.context.team_id : null,
  };
}

/** Slack answered `ok: false` (not a rate limit, not a transport failure). */
function isPlatformRefusal(error: unknown): boolean {
  const slack = error as { code?: unknown; data?: { error?: unknown } } | null;
  return slack?.code === 'slack_webapi_platform_error' && slack.data?.error !== 'ratelimited';
}

/** Doubling from the base with half jitter, capped at five minutes; a rate limit's own wait wins. */
export function retryDelay(
  error: unknown,
  attempts: number,
  baseMs: number,
  random: () => number,
): number {
  const retryAfter = (error as { retryAfter?: unknown } | null)?.retryAfter;
  if (typeof retryAfter === 'number' && retryAfter > 0) return Math.min(retryAfter * 1000, 600_000);
  return backoffMs(baseMs, attempts + 1, random, 300_000);
}

/** An error as Parley records it: its own message, cut short (never a response body). */
function describe(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 300);
}
