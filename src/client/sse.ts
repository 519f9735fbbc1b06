/**
 * A server-sent events parser (the WHATWG event-stream format) over a fetch streaming
 * body. Not EventSource: that cannot send `Authorization` or `Parley-Protocol-Version`,
 * and its own reconnects would bypass the resync rules of PROTOCOL.md §7.
 */

/** One dispatched event block. `id` is null when the block had no `id:` line (typing). */
export interface SseMessage {
  kind: 'message';
  id: string | null;
  event: string;
  data: string;
}

/** A comment line (`: keep-alive`): proof the connection is alive, nothing more. */
export interface SseComment {
  kind: 'comment';
  text: string;
}

export type SseFrame = SseMessage | SseComment;

/** Incremental: push decoded text as it arrives, take the complete frames. */
export class SseParser {
  private buffer = '';
  private started = false;
  private id: string | null = null;
  private event = '';
  private data: string[] = [];

  push(text: string): SseFrame[] {
    this.buffer += text;
    if (!this.started && this.buffer.length > 0) {
      this.started = true;
      if (this.buffer.startsWith('\uFEFF')) this.buffer = this.buffer.slice(1);
    }
    const frames: SseFrame[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
      if (match[0] === '\r' && match.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const frame = this.line(line);
      if (frame) frames.push(frame);
    }
    return frames;
  }

  /** At the end of the stream a lone trailing \r is a whole line end after all. */
  finish(): SseFrame[] {
    if (!this.buffer.endsWith('\r')) return [];
    return this.push('\n');
  }

  private line(line: string): SseFrame | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return { kind: 'comment', text: line.slice(1).trim() };
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    // `retry:` and unknown fields are ignored: the subscription owns reconnect timing.
    return null;
  }

  private dispatch(): SseMessage | null {
    const message: SseMessage = {
      kind: 'message',
      id: this.id,
      event: this.event || 'message',
      data: this.data.join('\n'),
    };
    const hasData = this.data.length > 0;
    this.id = null;
    this.event = '';
    this.data = [];
    return hasData ? message : null;
  }
}

/** Reads a streaming body and yields frames as they complete; ends when the body ends. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
    yield* parser.push(decoder.decode());
    yield* parser.finish();
  } finally {
    // Runs on a consumer's early return too: release the connection.
    await reader.cancel().catch(() => {});
  }
}
