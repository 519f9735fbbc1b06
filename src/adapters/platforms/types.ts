import type { Adapter, AdapterPostableMessage } from 'chat';
import type { PlatformConfig, PlatformName } from '../../config/platformTypes.js';
import type { Headers } from '../verify/secrets.js';

/**
 * One chat platform as Parley uses it: the Chat SDK adapter (inbound parsing, cards,
 * posting), the request check Parley runs on the raw body before the SDK sees it, and
 * the outbound calls the delivery loop makes. Every outbound call takes the signal of its
 * deadline and passes it to its HTTP requests (see `call.ts`): when it aborts, the
 * request is aborted, not left running.
 */
export interface PlatformClient {
  name: PlatformName;
  config: PlatformConfig;
  /** Registered with the Chat instance under `name`. */
  adapter: Adapter;
  /** The platform's signature or token, on the raw body, before anything is parsed. */
  verify(headers: Headers, raw: Buffer): Promise<boolean>;
  /**
   * Posts a new message and returns its platform id. `key` identifies the outbox row: a
   * platform with an idempotency key gets it, so a post repeated after a crash returns
   * the first message instead of making a second; a platform that can be read back
   * carries it as a marker (`findPosted`).
   */
  post(
    threadId: string,
    message: AdapterPostableMessage,
    key: string,
    signal: AbortSignal,
  ): Promise<string>;
  edit(
    threadId: string,
    messageId: string,
    message: AdapterPostableMessage,
    signal: AbortSignal,
  ): Promise<void>;
  /**
   * Where the platform can be read back: the message an earlier post of outbox row `key`
   * made although its answer was lost (the deadline passed, the connection broke), or
   * null when there is none. Asked before a row that never got a message id posts again.
   */
  findPosted?(threadId: string, lost: LostPost, signal: AbortSignal): Promise<string | null>;
  /** Shows "typing…" (or the platform's equivalent) for a few seconds. */
  typing(threadId: string, signal: AbortSignal): Promise<void>;
  /** A message only `userId` sees where the platform has them, else a thread message. */
  notify(threadId: string, userId: string, text: string, signal: AbortSignal): Promise<void>;
  /** Platforms whose own streaming Parley uses (Slack); absent: post, then edits. */
  stream?: NativeStream;
}

/** What `findPosted` looks for: the row's marker, or a stream it may have started. */
export interface LostPost {
  /** The outbox row's id (the marker a post carries). */
  key: string;
  /** When the row was created: nothing it posted is older. */
  since: Date;
  /** Message ids the thread's other rows have: never this row's. */
  known: ReadonlySet<string>;
}

/** A platform's message streaming: one message that grows as text is appended. */
export interface NativeStream {
  /** Whether this thread and recipient can have a stream (else the reply is edited). */
  available(threadId: string, recipient: StreamRecipient): boolean;
  /** Starts the stream with its first text; returns the message id. */
  start(
    threadId: string,
    text: string,
    recipient: StreamRecipient,
    signal: AbortSignal,
  ): Promise<string>;
  append(threadId: string, messageId: string, text: string, signal: AbortSignal): Promise<void>;
  /** Ends it (marked as row `key`'s); the message then takes edits like any other. */
  stop(threadId: string, messageId: string, key: string, signal: AbortSignal): Promise<void>;
}

/** Who a stream is for (Slack needs the user and workspace that started the turn). */
export interface StreamRecipient {
  userId: string | null;
  teamId: string | null;
}

export type Env = Record<string, string | undefined>;

/** A platform's variable, set (compileConfig checked it at start). */
export function secret(env: Env, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`the variable ${name} is not set`);
  return value;
}
