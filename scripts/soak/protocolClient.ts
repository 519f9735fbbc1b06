import type { Apis } from './http.js';
import { sleep } from './http.js';
import type { Ledger } from './ledger.js';
import { spreadOver } from './pacer.js';
import type { Random } from './random.js';

/** What each of the soak's protocol clients (OpenAI, A2A, MCP) is given. */
export interface ProtocolClientContext {
  apis: Apis;
  ledger: Ledger;
  random: Random;
  /** Turns to send, spread evenly over `windowMs`. */
  count: number;
  windowMs: number;
  /** How long a turn is followed before it is left to the drain. */
  followTimeoutMs: number;
}

/**
 * Drives `count` turns spread over the window, each with its own random and a label
 * `<prefix><index>` (its idempotency key, or what its message carries).
 */
export async function driveSpread(
  context: ProtocolClientContext,
  prefix: string,
  drive: (random: Random, label: string) => Promise<void>,
): Promise<void> {
  await spreadOver(context.count, context.windowMs, context.random, (index) =>
    drive(context.random.fork(`${prefix}-${index}`), `${prefix}${index}`),
  );
}

/** The pause before a retry: 100 ms doubling with each attempt up to 2 s, half jittered. */
export async function retryPause(attempt: number, random: Random): Promise<void> {
  const ceiling = Math.min(2_000, 100 * 2 ** Math.min(attempt, 5));
  await sleep(random.between(ceiling / 2, ceiling));
}
