import type { ServerResponse } from 'node:http';

/**
 * Writing one server-sent event stream, as every Parley stream does: a client that leaves
 * more than `bufferBytes` unread is dropped (it resumes with Last-Event-ID whenever it comes
 * back), a keep-alive comment goes out every `keepaliveMs`, and a writer that must not run
 * ahead of its reader waits for `drain` — a reader that reads nothing for two keep-alive
 * intervals is stalled and dropped. `onDrop` is told when the writer closed the connection.
 */
export class SseWriter {
  constructor(
    private readonly response: ServerResponse,
    private readonly options: { bufferBytes: number; keepaliveMs: number; onDrop: () => void },
  ) {}

  /** Writes a frame; false when the socket's buffer is full (wait with `drained`). */
  write(chunk: string): boolean {
    if (this.response.writableEnded || this.response.destroyed) return true;
    const flushed = this.response.write(chunk);
    if (this.response.writableLength > this.options.bufferBytes) {
      this.drop();
      return true;
    }
    return flushed;
  }

  /** Starts the keep-alive comments; the returned function stops them. */
  keepAlive(): () => void {
    const timer = setInterval(() => this.write(': keep-alive\n\n'), this.options.keepaliveMs);
    return () => clearInterval(timer);
  }

  /** Waits until the client has read what is buffered, or is gone. */
  drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.response.destroyed) return resolve();
      const stalled = setTimeout(() => {
        this.drop();
        done();
      }, this.options.keepaliveMs * 2);
      const done = () => {
        clearTimeout(stalled);
        this.response.off('drain', done);
        this.response.off('close', done);
        resolve();
      };
      this.response.on('drain', done);
      this.response.on('close', done);
    });
  }

  private drop(): void {
    this.response.destroy();
    this.options.onDrop();
  }
}
