import type { Lock, QueueEntry, StateAdapter } from 'chat';
import { PostgresStateAdapter } from '@chat-adapter/state-pg';
import type { Logger } from '../log.js';
import { chatStateClient } from '../store/chatStateClient.js';
import type { Db } from '../store/db.js';
import { chatLogger } from './logger.js';

/**
 * Keys the SDK writes *before* its handler runs, to drop a platform's retry of an event
 * it has seen: the SDK's message dedupe, Slack's delivered-event marker, Telegram's
 * claimed update. If the process dies between such a write and the admission, the
 * platform's retry would be dropped and the message lost. Parley's admission is the
 * dedupe instead (the platform message id is the `turn_id`, so a retry is the same turn),
 * and it is written in the same transaction as the message: these markers are never
 * stored, so a retry always reaches the admission.
 */
const preHandlerMarkers = ['dedupe:', 'slack:event-delivered:', 'telegram:webhook-update:'];

function isMarker(key: string): boolean {
  return preHandlerMarkers.some((prefix) => key.startsWith(prefix));
}

/**
 * The Chat SDK's state on Parley's database: `@chat-adapter/state-pg` (subscriptions,
 * locks, the SDK's caches and lists, shared by every process and kept across restarts),
 * with the pre-handler markers above left out.
 */
export class ParleyChatState implements StateAdapter {
  private readonly store: PostgresStateAdapter;

  constructor(db: Db, log: Logger) {
    this.store = new PostgresStateAdapter({
      client: chatStateClient(db),
      autoCreateSchema: false,
      logger: chatLogger(log, 'chat-state'),
    });
  }

  connect = () => this.store.connect();
  disconnect = () => this.store.disconnect();
  subscribe = (threadId: string) => this.store.subscribe(threadId);
  unsubscribe = (threadId: string) => this.store.unsubscribe(threadId);
  isSubscribed = (threadId: string) => this.store.isSubscribed(threadId);
  acquireLock = (threadId: string, ttlMs: number) => this.store.acquireLock(threadId, ttlMs);
  forceReleaseLock = (threadId: string) => this.store.forceReleaseLock(threadId);
  releaseLock = (lock: Lock) => this.store.releaseLock(lock);
  extendLock = (lock: Lock, ttlMs: number) => this.store.extendLock(lock, ttlMs);
  appendToList = (key: string, value: unknown, options?: { maxLength?: number; ttlMs?: number }) =>
    this.store.appendToList(key, value, options);
  getList = <T = unknown>(key: string) => this.store.getList<T>(key);
  enqueue = (threadId: string, entry: QueueEntry, maxSize: number) =>
    this.store.enqueue(threadId, entry, maxSize);
  dequeue = (threadId: string) => this.store.dequeue(threadId);
  queueDepth = (threadId: string) => this.store.queueDepth(threadId);
  delete = (key: string) => this.store.delete(key);

  async get<T = unknown>(key: string): Promise<T | null> {
    return isMarker(key) ? null : this.store.get<T>(key);
  }

  async set<T = unknown>(key: string, value: T, ttlMs?: number): Promise<void> {
    if (!isMarker(key)) await this.store.set(key, value, ttlMs);
  }

  async setIfNotExists(key: string, value: unknown, ttlMs?: number): Promise<boolean> {
    return isMarker(key) ? true : this.store.setIfNotExists(key, value, ttlMs);
  }
}
