import { readSse } from '../../src/client/sse.js';
import type { Random } from './random.js';

/**
 * The clients' HTTP, as a careful client behaves (PROTOCOL.md §7): the protocol header on
 * every request; a request that fails with no answer, a 5xx or a timeout is sent again,
 * unchanged (same turn_id, same command_id), to the next API process in turn, with
 * exponential backoff and jitter, until a deadline.
 */
export interface JsonAnswer {
  status: number;
  body: any;
}

const attemptTimeoutMs = 10_000;

export class Apis {
  private next = 0;
  /** Attempts that got no answer, a 5xx or timed out. */
  failures = 0;

  constructor(private readonly urls: string[]) {}

  /** The next API process, round robin: a retry goes to the other one. */
  pick(): string {
    const url = this.urls[this.next % this.urls.length] as string;
    this.next += 1;
    return url;
  }

  /**
   * Sends until an answer below 500 arrives; null when `deadline` passes first.
   * `onRetry` hears of every attempt after the first.
   */
  async send(
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    options: { deadline: number; random: Random; onRetry?: () => void },
  ): Promise<JsonAnswer | null> {
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) options.onRetry?.();
      const answer = await sendOnce(this.pick(), method, path, body).catch(() => null);
      if (answer && answer.status < 500) return answer;
      this.failures += 1;
      if (Date.now() > options.deadline) return null;
      const ceiling = Math.min(2_000, 100 * 2 ** Math.min(attempt, 5));
      await sleep(options.random.between(ceiling / 2, ceiling));
    }
  }
}

export async function sendOnce(
  base: string,
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
): Promise<JsonAnswer> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      'parley-protocol-version': '1',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? null : JSON.stringify(body),
    signal: AbortSignal.timeout(attemptTimeoutMs),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: kept as text for the report.
  }
  return { status: response.status, body: parsed };
}

/** One journaled event as the stream delivers it (its `data:` JSON). */
export interface StreamEvent {
  type: string;
  sequence: number;
  turn_id?: string | null;
  [field: string]: any;
}

/**
 * Opens the session's event stream after `after` (Last-Event-ID) and yields its journaled
 * events, checking the SSE framing (`id:` = `sequence`, `event:` = `type`). Comments and
 * live-only `typing` frames are skipped. Ends when the connection ends; throws on a
 * non-200 answer.
 */
export async function* streamEvents(
  base: string,
  sessionId: string,
  after: number,
  signal: AbortSignal,
  onFramingError: (detail: string) => void,
): AsyncGenerator<StreamEvent> {
  const response = await fetch(`${base}/api/v1/chat/sessions/${sessionId}/events`, {
    headers: {
      accept: 'text/event-stream',
      'parley-protocol-version': '1',
      'last-event-id': String(after),
    },
    signal,
  });
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel().catch(() => {});
    throw new Error(`event stream answered ${response.status}`);
  }
  for await (const frame of readSse(response.body)) {
    if (frame.kind !== 'message' || frame.id === null) continue;
    const event = JSON.parse(frame.data) as StreamEvent;
    if (String(event.sequence) !== frame.id || event.type !== frame.event) {
      onFramingError(
        `session ${sessionId}: frame id ${frame.id} event ${frame.event} carries sequence ${event.sequence} type ${event.type}`,
      );
    }
    yield event;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
