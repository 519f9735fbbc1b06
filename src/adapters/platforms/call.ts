import { AsyncLocalStorage } from 'node:async_hooks';
import type { Adapter } from 'chat';
import type { PlatformClient } from './types.js';

/**
 * One outbound platform call as Parley makes it: the deadline that aborts its HTTP
 * requests, and for a post the outbox row it is for (the key a platform deduplicates by,
 * or the marker Parley finds the message by when the answer was lost).
 *
 * The Chat SDK's adapters build their requests deep inside (`postMessage` takes no
 * signal), so the call travels in an async context: each platform client runs the SDK
 * inside `inPlatformCall`, and each adapter's request function (Telegram's
 * `telegramFetch`, Discord's `discordFetch`, the Google client's `request`, an axios
 * interceptor for Slack and Teams) hands `requestSignal()` to the request itself.
 */
export interface PlatformCall {
  signal: AbortSignal;
  /** The outbox row's id, on a post (and its later edits). */
  key?: string;
}

const current = new AsyncLocalStorage<PlatformCall>();

export function inPlatformCall<T>(call: PlatformCall, work: () => Promise<T>): Promise<T> {
  return current.run(call, work);
}

/** The call in progress, if any. */
export function currentCall(): PlatformCall | undefined {
  return current.getStore();
}

/**
 * The signal for one HTTP request of a platform's SDK: the current call's deadline, or
 * for a request made outside any call (the SDK's own look-ups while it handles an inbound
 * event) a deadline of `fallbackMs`, so no platform request waits without end.
 */
export function requestSignal(fallbackMs: number): AbortSignal {
  return current.getStore()?.signal ?? AbortSignal.timeout(fallbackMs);
}

/**
 * A platform client's post, edit, typing and notice as most platforms make them: the SDK
 * adapter's own calls, each inside its platform call. A platform that does one
 * differently (an idempotent post, an ephemeral notice) overrides that one.
 */
export function sdkCalls(
  adapter: Adapter,
): Pick<PlatformClient, 'post' | 'edit' | 'typing' | 'notify'> {
  return {
    post: (threadId, message, key, signal) =>
      inPlatformCall(
        { signal, key },
        async () => (await adapter.postMessage(threadId, message)).id,
      ),
    edit: (threadId, messageId, message, signal) =>
      inPlatformCall({ signal }, async () => {
        await adapter.editMessage(threadId, messageId, message);
      }),
    typing: (threadId, signal) => inPlatformCall({ signal }, () => adapter.startTyping(threadId)),
    notify: (threadId, _userId, text, signal) =>
      inPlatformCall({ signal }, async () => {
        await adapter.postMessage(threadId, { markdown: text });
      }),
  };
}
