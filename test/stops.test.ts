import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Stops } from '../src/cli/stops.js';
import { createLogger } from '../src/log.js';

function capturingLog(): {
  log: ReturnType<typeof createLogger>;
  entries: () => Record<string, unknown>[];
} {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return {
    log: createLogger({ level: 'info', destination }),
    entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describe('a process stops its parts', () => {
  it('in the reverse of their start, every one even after a failure, the first failure thrown', async () => {
    const { log, entries } = capturingLog();
    const stops = new Stops(log);
    const order: string[] = [];
    stops.add('database', () => {
      order.push('database');
    });
    stops.add('worker', async () => {
      order.push('worker');
      throw new Error('worker would not stop');
    });
    stops.add('API', async () => {
      order.push('API');
      throw new Error('API would not close');
    });
    await expect(stops.stopAll()).rejects.toThrow('API would not close');
    expect(order).toEqual(['API', 'worker', 'database']);
    expect(
      entries()
        .filter((entry) => entry.msg === 'stopping failed')
        .map((e) => e.part),
    ).toEqual(['API', 'worker']);
  });

  it('names a part that is slow to stop while it is', async () => {
    const { log, entries } = capturingLog();
    const stops = new Stops(log, 20);
    let release = () => {};
    stops.add('webhooks', () => new Promise<void>((resolve) => (release = resolve)));
    const stopping = stops.stopAll();
    await new Promise((resolve) => setTimeout(resolve, 70));
    release();
    await stopping;
    const slow = entries().filter((entry) => entry.msg === 'still stopping');
    expect(slow.length).toBeGreaterThanOrEqual(2);
    expect(slow.every((entry) => entry.part === 'webhooks')).toBe(true);
    // Once stopped, nothing more is said of it.
    const count = entries().length;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(entries().length).toBe(count);
  });
});
