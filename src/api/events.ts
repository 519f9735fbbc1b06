import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ParleyError } from '../errors.js';
import { openStreams, sseConnections } from '../metrics.js';
import type { ParleyEvent } from '../protocol/events.js';
import { getSession } from '../store/getSession.js';
import { findVisibleSession } from '../store/findVisibleSession.js';
import { readEvents } from '../store/readEvents.js';
import type { ApiDeps } from './deps.js';
import { openEventStream } from './sseResponse.js';
import { SseWriter } from './sseWriter.js';
import { JournalFeed, type FeedSubscriber } from './feed.js';
import { viewerOf } from './sessionAccess.js';
import { StreamSlots } from './streamSlots.js';
import { route } from './contract.js';
import { whenClientGone } from './clientGone.js';

/** Events read per query while catching up; a reader far behind pages through the journal. */
const pageSize = 200;
/** Events a stream keeps from wake-ups while it is busy; past this it reads the journal. */
const maxQueued = 500;
/** Frames are sent together up to about this many characters a write. */
const chunkChars = 16_384;

/**
 * PROTOCOL.md §3: replay everything after the cursor, then live, without a gap and
 * without a duplicate. The process's feed tells each stream what is new (feed.ts); a
 * stream writes at its client's pace and catches up from the journal when it fell behind,
 * so a slow reader never slows the worker or other readers. A client that stops reading
 * holds at most one socket buffer and one frame of unflushed output (never more than
 * `limits.stream_buffer_bytes`), and is disconnected once it has read nothing for two
 * keep-alive intervals (it resumes with Last-Event-ID). Each principal may hold
 * `limits.streams_per_principal` streams on this process at once.
 */
export const eventContracts = {
  stream: route({
    method: 'GET',
    url: '/api/v1/chat/sessions/:sessionId/events',
    summary: 'SSE: replay after the cursor, then live',
    // The cursor's checks answer in their own order (a stream slot first), in the handler.
    parameters: [
      { name: 'Last-Event-ID', in: 'header', schema: { type: 'string' } },
      { name: 'after', in: 'query', schema: { type: 'integer', minimum: 0 } },
      {
        name: 'include',
        in: 'query',
        description: 'a comma-separated list: `reasoning` streams reasoning text',
        schema: { type: 'string' },
      },
    ],
    responses: {
      '200': {
        description: 'text/event-stream',
        content: { 'text/event-stream': { schema: { type: 'string' } } },
      },
    },
    errors: {
      '400': 'invalid_cursor',
      '404': 'session_not_found',
      '409': 'cursor_ahead (with latest_sequence)',
      '410': 'resync_required (with earliest_available_sequence, latest_sequence)',
      '429': 'too_many_streams',
    },
  }),
};

export function eventRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const feed = new JournalFeed(deps.db, deps.wakeups, deps.config.runtime.pollMs);
  const open = new Set<ServerResponse>();
  const slots = new StreamSlots(deps.config.limits.streamsPerPrincipal);
  app.addHook('onClose', async () => {
    feed.stop();
    for (const response of open) response.end();
  });

  app.get<{ Params: { sessionId: string }; Querystring: { after?: string; include?: string } }>(
    eventContracts.stream.url,
    async (request, reply) => {
      const sessionId = request.session.session_id;
      // The slot is taken before the first await and given back by the finally (or when
      // the client leaves), whether the request fails its checks or the stream ends.
      const release = slots.take(request, request.principal);
      try {
        await openStream(request, reply, sessionId);
      } finally {
        release();
      }
    },
  );

  async function openStream(
    request: FastifyRequest<{ Querystring: { after?: string; include?: string } }>,
    reply: FastifyReply,
    sessionId: string,
  ): Promise<void> {
    const principal = request.principal;
    const { tenant } = principal;
    const session = await getSession(deps.db, tenant, sessionId);
    if (!session) throw new ParleyError('session_not_found', 'no such session');
    // Last-Event-ID wins over ?after= (a browser's EventSource reconnecting sends both).
    const header = request.headers['last-event-id'];
    const raw =
      typeof header === 'string' && header.trim() !== ''
        ? header.trim()
        : (request.query.after ?? '0');
    if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) {
      throw new ParleyError(
        'invalid_cursor',
        'the cursor (Last-Event-ID or after) must be a sequence number',
      );
    }
    const after = Number(raw);
    // Reasoning text goes only to clients that ask for it; others get the event bare.
    const include = request.query.include;
    if (
      include !== undefined &&
      (typeof include !== 'string' || !/^[a-z_,]{0,64}$/.test(include))
    ) {
      throw new ParleyError('invalid_request', 'include: a comma-separated list, e.g. reasoning', {
        field: 'include',
      });
    }
    const includeReasoning = (include ?? '').split(',').includes('reasoning');
    if (after > session.latest_sequence) {
      throw new ParleyError('cursor_ahead', 'the cursor is past the latest event', {
        latest_sequence: session.latest_sequence,
      });
    }
    if (after < session.earliest_sequence - 1) {
      throw resyncRequired(after, session.earliest_sequence, session.latest_sequence);
    }

    const response = openEventStream(reply, { 'parley-protocol-version': '1' });
    open.add(response);
    openStreams.add(response);
    sseConnections.inc();
    const stream = new EventStream(
      deps,
      response,
      sessionId,
      after,
      session.latest_sequence,
      includeReasoning,
      async () =>
        (await findVisibleSession(deps.db, tenant, sessionId, viewerOf(deps, principal))) !== null,
    );
    const unsubscribe = feed.subscribe(sessionId, stream);
    const unwatch = whenClientGone(request, () => stream.close());
    try {
      if (session.state === 'running') stream.typing();
      await stream.run();
    } finally {
      unwatch();
      unsubscribe();
      open.delete(response);
      openStreams.delete(response);
      sseConnections.dec();
      if (!response.writableEnded) response.end();
    }
  }
}

/** A `reasoning_delta` without its text, for clients that did not ask for reasoning. */
function withoutReasoning(event: ParleyEvent): ParleyEvent {
  if (event.type !== 'reasoning_delta') return event;
  const { delta: _delta, ...bare } = event;
  return bare;
}

function resyncRequired(requested: number, earliest: number, latest: number): ParleyError {
  return new ParleyError(
    'resync_required',
    'events after this cursor were pruned; fetch the session and resume',
    {
      requested_sequence: requested,
      earliest_available_sequence: earliest,
      latest_sequence: latest,
    },
  );
}

/**
 * One client's stream. `cursor` is the last sequence written to it; `known` the latest
 * sequence the session is known to have; `queue` the events wake-ups carried beyond the
 * cursor, contiguous. The loop writes the queue when it continues the cursor, else reads
 * the journal after the cursor, else waits for the feed. A wake-up that arrives while the
 * loop reads or writes only raises `known`, so it is never lost.
 */
class EventStream implements FeedSubscriber {
  private closed = false;
  private queue: ParleyEvent[] = [];
  private wake: (() => void) | null = null;
  private lastTyping = 0;
  private readonly sse: SseWriter;

  constructor(
    private readonly deps: ApiDeps,
    response: ServerResponse,
    private readonly sessionId: string,
    private cursor: number,
    private known: number,
    private readonly includeReasoning: boolean,
    /** Whether the stream's principal may still see the session. */
    private readonly stillVisible: () => Promise<boolean>,
  ) {
    this.sse = new SseWriter(response, {
      bufferBytes: deps.config.limits.streamBufferBytes,
      keepaliveMs: deps.config.server.keepaliveMs,
      onDrop: () => this.close(),
    });
  }

  /** Who may see the session changed: a principal who no longer may loses the stream. */
  recheck(): void {
    this.stillVisible().then(
      (visible) => {
        if (!visible) this.end();
      },
      // Unknown for now (the database is unreachable): ending is the safe side.
      () => this.end(),
    );
  }

  /** The session is gone, or no longer the principal's to see: the stream ends. */
  end(): void {
    this.close();
  }

  offer(latest: number, events: ParleyEvent[] | null): void {
    if (latest > this.known) this.known = latest;
    if (events && events.length > 0) {
      const tail = this.queue.at(-1)?.sequence ?? this.cursor;
      const fresh = events.filter((event) => event.sequence > tail);
      if (
        fresh.length > 0 &&
        fresh[0]?.sequence === tail + 1 &&
        this.queue.length + fresh.length <= maxQueued
      ) {
        this.queue.push(...fresh);
      }
    }
    this.wake?.();
  }

  /** Live-only: no `id:`, never journaled, at most one per second. */
  typing(): void {
    const now = Date.now();
    if (now - this.lastTyping < 1000) return;
    this.lastTyping = now;
    this.write(
      `event: typing\ndata: ${JSON.stringify({ type: 'typing', session_id: this.sessionId })}\n\n`,
    );
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async run(): Promise<void> {
    const stopKeepAlive = this.sse.keepAlive();
    try {
      while (!this.closed) {
        this.queue = this.queue.filter((event) => event.sequence > this.cursor);
        if (this.queue.length > 0 && this.queue[0]?.sequence !== this.cursor + 1) this.queue = [];
        if (this.queue.length > 0) {
          const events = this.queue;
          this.queue = [];
          await this.sendAll(events);
        } else if (this.known > this.cursor) {
          const events = await readEvents(this.deps.db, this.sessionId, this.cursor, pageSize);
          if (events.length === 0) {
            // Nothing past the cursor after all (the session's counter was read ahead).
            this.known = this.cursor;
            continue;
          }
          if (events[0]?.sequence !== this.cursor + 1) {
            // Pruned under our feet: end the stream; the reconnect gets 410 and resyncs.
            break;
          }
          await this.sendAll(events);
        } else {
          await new Promise<void>((resolve) => {
            this.wake = resolve;
          });
          this.wake = null;
        }
      }
    } finally {
      stopKeepAlive();
    }
  }

  /**
   * Sends what follows the cursor, as few writes as it takes: the frames of one wake-up
   * (a commit's delta, usage and done) go out in one chunk, so the client reads once and
   * the server makes one write where it made one per frame.
   */
  private async sendAll(events: ParleyEvent[]): Promise<void> {
    let frames = '';
    for (const event of events) {
      if (this.closed) return;
      if (event.sequence !== this.cursor + 1) continue;
      const shown = this.includeReasoning ? event : withoutReasoning(event);
      frames += `id: ${event.sequence}\nevent: ${event.type}\ndata: ${JSON.stringify(shown)}\n\n`;
      this.cursor = event.sequence;
      if (frames.length >= chunkChars) {
        const flushed = this.write(frames);
        frames = '';
        if (!flushed) await this.drained();
      }
    }
    if (frames !== '' && !this.write(frames)) await this.drained();
  }

  private drained(): Promise<void> {
    return this.closed ? Promise.resolve() : this.sse.drained();
  }

  /** Writes a frame; false when the socket's buffer is full (wait for `drain`). */
  private write(chunk: string): boolean {
    return this.closed ? true : this.sse.write(chunk);
  }
}
