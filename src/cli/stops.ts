import type { Logger } from '../log.js';

/** How long a part may take to stop before the log names it (and again each time after). */
const slowStopMs = 5_000;

/**
 * The parts of a process, stopped in the reverse of their start: the API before the
 * worker, the worker before what it uses, the database last. Every part is stopped even
 * when one before it failed (the first failure is thrown at the end), and a part still
 * stopping after a few seconds is named in the log while it is, so that a shutdown its
 * supervisor ends with SIGKILL says where it hung.
 */
export class Stops {
  private readonly parts: { name: string; stop: () => Promise<void> | void }[] = [];

  constructor(
    private readonly log: Logger,
    private readonly warnAfterMs = slowStopMs,
  ) {}

  add(name: string, stop: () => Promise<void> | void): void {
    this.parts.push({ name, stop });
  }

  async stopAll(): Promise<void> {
    let failure: Error | null = null;
    for (const part of this.parts.splice(0).reverse()) {
      const began = Date.now();
      const timer = setInterval(
        () => this.log.warn({ part: part.name, ms: Date.now() - began }, 'still stopping'),
        this.warnAfterMs,
      );
      timer.unref();
      try {
        await part.stop();
      } catch (error) {
        this.log.error({ part: part.name, err: (error as Error).message }, 'stopping failed');
        failure ??= error instanceof Error ? error : new Error(String(error));
      } finally {
        clearInterval(timer);
      }
    }
    if (failure !== null) throw failure;
  }
}
