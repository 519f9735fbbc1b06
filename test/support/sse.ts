/** A received SSE frame: `id` is absent for live-only events (typing) and comments. */
export interface SseFrame {
  id: string | null;
  event: string;
  data: any;
}

/**
 * A minimal SSE client over a real socket (fetch streaming), recording every frame and
 * comment so tests can assert exactly what crossed the wire.
 */
export class SseClient {
  readonly frames: SseFrame[] = [];
  readonly comments: string[] = [];
  status = 0;
  error: any = null;
  private readonly controller = new AbortController();
  private waiters: (() => void)[] = [];
  private ended = false;
  done: Promise<void> = Promise.resolve();

  static async open(
    url: string,
    sessionId: string,
    options: { lastEventId?: string; after?: number; headers?: Record<string, string> } = {},
  ): Promise<SseClient> {
    const query = options.after === undefined ? '' : `?after=${options.after}`;
    return SseClient.openPath(url, `/api/v1/chat/sessions/${sessionId}/events${query}`, options);
  }

  /** Any SSE route of the server (the user stream, say). */
  static async openPath(
    url: string,
    path: string,
    options: { lastEventId?: string; headers?: Record<string, string> } = {},
  ): Promise<SseClient> {
    const client = new SseClient();
    const response = await fetch(`${url}${path}`, {
      headers: {
        accept: 'text/event-stream',
        'parley-protocol-version': '1',
        ...(options.lastEventId === undefined ? {} : { 'last-event-id': options.lastEventId }),
        ...options.headers,
      },
      signal: client.controller.signal,
    });
    client.status = response.status;
    if (response.status !== 200) {
      client.error = await response.json();
      client.ended = true;
      return client;
    }
    client.done = client.read(response.body as ReadableStream<Uint8Array>);
    return client;
  }

  /** Durable events only (frames with an id), in arrival order. */
  get events(): any[] {
    return this.frames.filter((frame) => frame.id !== null).map((frame) => frame.data);
  }

  get closed(): boolean {
    return this.ended;
  }

  async waitFor(predicate: (client: SseClient) => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      if (this.ended && !predicate(this)) throw new Error('stream ended before the condition held');
      if (Date.now() > deadline) {
        throw new Error(
          `timed out; saw ${this.events.map((event) => `${event.sequence}:${event.type}`).join(' ')}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  waitForType(type: string, timeoutMs?: number): Promise<void> {
    return this.waitFor((client) => client.events.some((event) => event.type === type), timeoutMs);
  }

  close(): void {
    this.controller.abort();
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let boundary: number;
        while ((boundary = buffer.indexOf('\n\n')) >= 0) {
          this.parse(buffer.slice(0, boundary));
          buffer = buffer.slice(boundary + 2);
        }
        this.notify();
      }
    } catch {
      // aborted by close() or the server went away
    } finally {
      this.ended = true;
      this.notify();
    }
  }

  private parse(block: string): void {
    let id: string | null = null;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
      else if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length > 0) this.frames.push({ id, event, data: JSON.parse(data.join('\n')) });
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}
