import { sleep } from './http.js';
import type { Random } from './random.js';

/**
 * Spreads the run's admissions evenly over the chaos window, so that every failure the
 * schedule injects meets turns in flight. The session loops ask for turns; the k-th
 * turn is due at k/turns of the window. When the budget is spent, `take` answers 0.
 */
export class Pacer {
  private reserved = 0;
  private readonly start = Date.now();

  constructor(
    private readonly turns: number,
    /** Admissions end a little before the chaos does, so the last ones meet it too. */
    private readonly windowMs: number,
  ) {}

  get remaining(): number {
    return this.turns - this.reserved;
  }

  /** Reserves up to `wanted` turns and waits until the first of them is due. */
  async take(wanted: number): Promise<number> {
    const granted = Math.min(wanted, this.turns - this.reserved);
    if (granted <= 0) return 0;
    const due = this.start + (this.reserved / this.turns) * this.windowMs;
    this.reserved += granted;
    const wait = due - Date.now();
    if (wait > 0) await sleep(wait);
    return granted;
  }
}

/**
 * Starts `count` tasks spread over `windowMs` (each gap random around the mean, from
 * `random`) and waits for all of them: a client's dispatches, say.
 */
export async function spreadOver(
  count: number,
  windowMs: number,
  random: Random,
  task: (index: number) => Promise<void>,
): Promise<void> {
  const tasks: Promise<void>[] = [];
  const gapMs = count > 0 ? windowMs / count : 0;
  for (let index = 1; index <= count; index++) {
    tasks.push(task(index));
    await sleep(random.between(gapMs / 2, (gapMs * 3) / 2));
  }
  await Promise.all(tasks);
}
