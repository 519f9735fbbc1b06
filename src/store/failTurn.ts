import { newEvent } from '../protocol/events.js';
import type { Db, Queryable } from './db.js';
import { appendEvents } from './appendEvents.js';
import { closeBurst } from './closeBurst.js';
import { sumUsage, usageEvents, type BurstRef, type Usage } from './commitTurn.js';
import { recordUsage } from './recordUsage.js';
import type { Lease } from './types.js';

/** Bills a closing step's provider calls (failed or cancelled calls are billed too). */
export async function billUsage(
  tx: Queryable,
  lease: Lease,
  turnId: string,
  usage: Usage[],
): Promise<void> {
  if (usage.length === 0) return;
  const agent = (
    await tx.query<{ agent: string }>('select agent from sessions where session_id = $1', [
      lease.sessionId,
    ])
  ).rows[0]?.agent as string;
  await recordUsage(
    tx,
    usage.map((call) => ({
      tenant: lease.tenant,
      sessionId: lease.sessionId,
      turnId,
      agent,
      model: call.model,
      purpose: call.purpose,
      outcome: call.outcome,
      inputTokens: call.input_tokens,
      outputTokens: call.output_tokens,
      cachedInputTokens: call.cached_input_tokens,
      reasoningTokens: call.reasoning_tokens,
      costUsd: call.cost_usd,
      latencyMs: call.latency_ms,
      ttftMs: call.ttft_ms,
    })),
  );
  const totals = sumUsage(usage);
  await tx.query(
    `update sessions set input_tokens = input_tokens + $2, output_tokens = output_tokens + $3,
            cost_usd = cost_usd + $4 where session_id = $1`,
    [lease.sessionId, totals.input_tokens, totals.output_tokens, totals.cost_usd],
  );
}

/**
 * Ends a burst for good with an `error` event (a permanent provider error, or retries
 * exhausted). Deliberately not "progress": repeated failures lead to parking.
 */
export async function failTurn(
  db: Db,
  lease: Lease,
  burst: BurstRef & { code: string; message: string; usage: Usage[] },
): Promise<number> {
  const lead = burst.turnIds[0] as string;
  return db.transaction(async (tx) => {
    // The append takes the session row first (one lock order everywhere).
    const sequence = await appendEvents(tx, lease, [
      ...usageEvents(lead, burst.usage),
      newEvent('error', lead, {
        code: burst.code,
        message: burst.message,
        turn_ids: burst.turnIds,
      }),
    ]);
    await closeBurst(tx, lease, burst, 'error');
    await billUsage(tx, lease, lead, burst.usage);
    return sequence;
  });
}
