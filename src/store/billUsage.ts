import type { Queryable } from './db.js';
import { recordUsage } from './recordUsage.js';
import type { Lease } from './types.js';
import { sumUsage, type Usage } from './usageRows.js';

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
