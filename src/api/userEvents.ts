import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';
import {
  changedWorkspacePanels,
  removedWorkspacePanels,
  type Panel,
  type PanelRemoval,
} from '../store/panels.js';
import { readUserFeed, userFeedReplayMs, type UserFeedItem } from '../store/userFeed.js';
import { route } from './contract.js';
import type { ApiDeps } from './deps.js';
import { viewerOf } from './sessionAccess.js';
import { openEventStream } from './sseResponse.js';
import { SseWriter } from './sseWriter.js';
import { StreamSlots } from './streamSlots.js';
import { whenClientGone } from './clientGone.js';

/** Wake-ups that come close together are read as one. */
const wakeupBatchMs = 100;
const pageSize = 500;

export const userEventContracts = {
  stream: route({
    method: 'GET',
    url: '/api/v1/me/events',
    summary: "SSE: what the caller's screens show, across sessions, live (resumable)",
    parameters: [
      {
        name: 'Last-Event-ID',
        in: 'header',
        description: 'the `id` of the last frame received: what changed since is replayed',
        schema: { type: 'string' },
      },
    ],
    responses: {
      '200': {
        description: 'text/event-stream',
        content: { 'text/event-stream': { schema: { type: 'string' } } },
      },
    },
    errors: { '400': 'invalid_cursor', '429': 'too_many_streams' },
  }),
};

/**
 * One live stream per person (docs/PROTOCOL.md, "The user stream"): the journal events of
 * every session the caller may see that change what a screen shows (a session list, an
 * inbox, an execution, a panel), and the caller's workspace panels as they change or go. Frames
 * carry an `id` (the stream's time cursor, in milliseconds): a reconnect with
 * `Last-Event-ID` is sent what changed since, so nothing is missed; an item may come twice
 * across a reconnect (each names its session and sequence, or its panel and time).
 * The process's one wake-up subscription tells every stream to read; a poll covers lost
 * wake-ups and the changes that send none (a workspace panel). Idle, a stream costs a
 * keep-alive and one query per poll interval.
 */
export function userEventRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const streams = new Set<UserStream>();
  const slots = new StreamSlots(deps.config.limits.streamsPerPrincipal);
  let batch: NodeJS.Timeout | null = null;
  const unsubscribe = deps.wakeups.subscribe(() => {
    if (batch !== null || streams.size === 0) return;
    batch = setTimeout(() => {
      batch = null;
      for (const stream of streams) stream.poke();
    }, wakeupBatchMs);
  });
  app.addHook('onClose', async () => {
    unsubscribe();
    if (batch) clearTimeout(batch);
    for (const stream of streams) stream.close();
  });

  app.get(userEventContracts.stream.url, async (request, reply) => {
    const principal = request.principal;
    const release = slots.take(request, principal);
    try {
      const header = request.headers['last-event-id'];
      const cursor = parseCursor(typeof header === 'string' ? header.trim() : '');
      const response = openEventStream(reply, { 'parley-protocol-version': '1' });
      const stream = new UserStream(deps, principal, response, cursor);
      streams.add(stream);
      const unwatch = whenClientGone(request, () => stream.close());
      try {
        await stream.run();
      } finally {
        unwatch();
        streams.delete(stream);
        if (!response.writableEnded) response.end();
      }
    } finally {
      release();
    }
  });
}

/** A `Last-Event-ID` as this stream writes it (milliseconds since 1970), or none. */
function parseCursor(raw: string): number | null {
  if (raw === '') return null;
  const cursor = /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(cursor) || cursor > Date.now() + 60_000) {
    throw new ParleyError('invalid_cursor', 'Last-Event-ID: not a cursor of this stream');
  }
  return cursor;
}

class UserStream {
  private closed = false;
  private wake: (() => void) | null = null;
  private poked = false;
  /** Items sent within the overlap window, by key: each is sent once per connection. */
  private readonly sent = new Map<string, number>();
  /** The time the next read looks from (before the overlap). */
  private watermark: number;
  private readonly resumed: boolean;
  private readonly tooOld: boolean;
  private readonly sse: SseWriter;

  constructor(
    private readonly deps: ApiDeps,
    private readonly principal: Principal,
    response: ServerResponse,
    cursor: number | null,
  ) {
    // A reader that falls behind by the bound is dropped: it resumes with Last-Event-ID.
    this.sse = new SseWriter(response, {
      bufferBytes: deps.config.limits.streamBufferBytes,
      keepaliveMs: deps.config.server.keepaliveMs,
      onDrop: () => this.close(),
    });
    const now = Date.now();
    this.tooOld = cursor !== null && cursor < now - userFeedReplayMs;
    this.resumed = cursor !== null && !this.tooOld;
    this.watermark = this.resumed ? (cursor as number) : now;
  }

  poke(): void {
    this.poked = true;
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async run(): Promise<void> {
    const stopKeepAlive = this.sse.keepAlive();
    try {
      // `ready` says where the stream starts: resumed from the cursor, or from now (the
      // client loads its lists first); `resync` that the cursor was too old to resume.
      this.frame(this.tooOld ? 'resync' : 'ready', { resumed: this.resumed });
      while (!this.closed) {
        this.poked = false;
        await this.readOnce();
        if (this.poked) continue;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          const timer = setTimeout(resolve, this.deps.config.runtime.pollMs);
          timer.unref();
        });
        this.wake = null;
      }
    } finally {
      stopKeepAlive();
    }
  }

  /**
   * Reads and sends what changed since the watermark (less the overlap), page by page;
   * the next read looks from the time of this one's first query.
   */
  private async readOnce(): Promise<void> {
    // A transaction that began before the last read and committed after it is still seen
    // (`server.user_stream_overlap_ms`); what is read again is sent once per connection.
    const overlap = this.deps.config.server.userStreamOverlapMs;
    const since = new Date(this.watermark - overlap);
    const viewer = viewerOf(this.deps, this.principal);
    const { db } = this.deps;
    const { tenant } = this.principal;
    // Every frame of this read carries the watermark it started from, never its own read
    // time: a read sends in time order, and a connection lost midway must resume from
    // before everything it did not send yet. Once the read is whole, the watermark moves
    // to its time, and the next read's frames say so.
    const id = String(this.watermark);
    let readAt: number | null = null;
    let after: UserFeedItem | null = null;
    for (;;) {
      const page = await readUserFeed(db, tenant, viewer, since, pageSize, after);
      readAt ??= page.readAt.getTime();
      for (const item of page.items) {
        this.once(`e:${item.session_id}:${item.event.sequence}`, item.at, () =>
          this.frame('session_event', { session_id: item.session_id, event: item.event }, id),
        );
      }
      if (page.items.length < pageSize || this.closed) break;
      after = page.items[page.items.length - 1] as UserFeedItem;
    }
    let afterPanel: { panel: Panel; at: Date } | null = null;
    for (;;) {
      const panels = await changedWorkspacePanels(db, this.principal, since, pageSize, afterPanel);
      for (const item of panels) {
        this.once(`p:${item.panel.id}:${item.panel.updated_at}`, item.at, () =>
          this.frame('panel', { panel: item.panel }, id),
        );
      }
      if (panels.length < pageSize || this.closed) break;
      afterPanel = panels[panels.length - 1] as { panel: Panel; at: Date };
    }
    let afterRemoval: { removal: PanelRemoval; at: Date } | null = null;
    for (;;) {
      const removals = await removedWorkspacePanels(
        db,
        this.principal,
        since,
        pageSize,
        afterRemoval,
      );
      for (const item of removals) {
        this.once(`r:${item.removal.panel_id}:${item.at.getTime()}`, item.at, () =>
          this.frame('panel_removed', item.removal, id),
        );
      }
      if (removals.length < pageSize || this.closed) break;
      afterRemoval = removals[removals.length - 1] as { removal: PanelRemoval; at: Date };
    }
    this.watermark = Math.max(this.watermark, readAt ?? this.watermark);
    // What fell out of the overlap window is never read again: forget it.
    for (const [key, at] of this.sent) {
      if (at < this.watermark - 2 * overlap) this.sent.delete(key);
    }
  }

  /** Sends an item unless this connection sent it already. */
  private once(key: string, at: Date, send: () => void): void {
    if (this.sent.has(key)) return;
    this.sent.set(key, at.getTime());
    send();
  }

  private frame(type: string, data: object, id?: string): void {
    const head = id === undefined ? '' : `id: ${id}\n`;
    this.write(`${head}event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  }

  private write(chunk: string): void {
    if (!this.closed) this.sse.write(chunk);
  }
}
