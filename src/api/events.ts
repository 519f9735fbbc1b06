import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { ParleyError } from '../errors.js';
import { sseConnections } from '../metrics.js';
import { getSession } from '../store/getSession.js';
import { readEvents } from '../store/readEvents.js';
import type { JournalEvent } from '../store/types.js';
import type { ApiDeps } from './deps.js';

/** Events read per query while catching up; a reader far behind pages through the journal. */
const pageSize = 200;

/**
 * PROTOCOL.md §3: replay everything after the cursor, then live, without a gap and
 * without a duplicate. Each reader reads the journal itself at its own pace: a slow
 * reader never slows the worker or other readers. Wake-ups make it prompt; polling makes
 * it correct when one is lost.
 */
export function eventRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const open = new Set<ServerResponse>();
  app.addHook('onClose', async () => {
    for (const response of open) response.end();
  });

  app.get<{ Params: { sessionId: string }; Querystring: { after?: string } }>(
    '/api/v1/chat/sessions/:sessionId/events',
    async (request, reply) => {
      const tenant = request.principal.tenant;
      const sessionId = request.params.sessionId;
      const session = await getSession(deps.db, tenant, sessionId);
      if (!session) throw new ParleyError('session_not_found', 'no such session');
      // Last-Event-ID wins over ?after= (a browser's EventSource reconnecting sends both).
      const header = request.headers['last-event-id'];
      const raw =
        typeof header === 'string' && header.trim() !== ''
          ? header.trim()
          : (request.query.after ?? '0');
      if (!/^\d{1,15}$/.test(raw)) {
        throw new ParleyError(
          'invalid_cursor',
          'the cursor (Last-Event-ID or after) must be a sequence number',
        );
      }
      const after = Number(raw);
      if (after > session.latest_sequence) {
        throw new ParleyError('cursor_ahead', 'the cursor is past the latest event', {
          latest_sequence: session.latest_sequence,
        });
      }
      if (after < session.earliest_sequence - 1) {
        throw resyncRequired(after, session.earliest_sequence, session.latest_sequence);
      }

      reply.hijack();
      const response = reply.raw;
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'parley-protocol-version': '1',
      });
      response.flushHeaders();
      open.add(response);
      sseConnections.inc();
      const stream = new EventStream(deps, response, sessionId, after);
      request.raw.on('close', () => stream.close());
      response.on('close', () => stream.close());
      try {
        await stream.run(session.state === 'running');
      } finally {
        open.delete(response);
        sseConnections.dec();
        if (!response.writableEnded) response.end();
      }
    },
  );
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

class EventStream {
  private closed = false;
  private wake: (() => void) | null = null;
  private lastTyping = 0;

  constructor(
    private readonly deps: ApiDeps,
    private readonly response: ServerResponse,
    private readonly sessionId: string,
    private cursor: number,
  ) {}

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async run(workerActive: boolean): Promise<void> {
    const unsubscribe = this.deps.wakeups.subscribe((wakeup) => {
      if (wakeup.sessionId !== this.sessionId) return;
      if (wakeup.kind === 'typing') this.typing();
      else if (wakeup.sequence > this.cursor) this.wake?.();
    });
    const keepalive = setInterval(
      () => this.write(': keep-alive\n\n'),
      this.deps.config.server.keepaliveMs,
    );
    try {
      if (workerActive) this.typing();
      while (!this.closed) {
        const events = await readEvents(this.deps.db, this.sessionId, this.cursor, pageSize);
        if (events.length > 0 && (events[0] as JournalEvent).sequence !== this.cursor + 1) {
          // Pruned under our feet: end the stream; the reconnect gets 410 and resyncs.
          break;
        }
        for (const event of events) {
          if (this.closed) break;
          await this.send(event);
          this.cursor = event.sequence;
        }
        if (events.length === pageSize) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.deps.config.runtime.pollMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = null;
      }
    } finally {
      unsubscribe();
      clearInterval(keepalive);
    }
  }

  private async send(event: JournalEvent): Promise<void> {
    const ok = this.write(
      `id: ${event.sequence}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`,
    );
    if (!ok && !this.closed) {
      await new Promise<void>((resolve) => {
        this.response.once('drain', resolve);
        this.wake = resolve;
      });
    }
  }

  /** Live-only: no `id:`, never journaled, throttled to one per second. */
  private typing(): void {
    const now = Date.now();
    if (now - this.lastTyping < 1000) return;
    this.lastTyping = now;
    this.write(
      `event: typing\ndata: ${JSON.stringify({ type: 'typing', session_id: this.sessionId })}\n\n`,
    );
  }

  private write(chunk: string): boolean {
    if (this.closed || this.response.writableEnded || this.response.destroyed) return true;
    return this.response.write(chunk);
  }
}
