import type { Queryable } from './db.js';
import { insertUsageSql } from './usageRows.js';

/** One image-generation call, as its usage row keeps it. */
export interface ImageCall {
  tenant: string;
  sessionId: string;
  /** The turn the call was made for (the lead turn of its burst). */
  turnId: string;
  /** `provider/model`. */
  model: string;
  outcome: 'ok' | 'failed';
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  latencyMs: number;
}

/**
 * Bills one call of an image model (purpose `image`) the moment it returns, in one
 * statement: the session's totals and the usage row the budgets read. Unlike a reply's
 * model call, it is not held back for the turn's commit: the provider has charged for the
 * images whatever becomes of the turn, and the photos it made are already in the library.
 */
export async function billImageCall(db: Queryable, call: ImageCall): Promise<void> {
  const row = {
    model: call.model,
    purpose: 'image',
    outcome: call.outcome,
    input_tokens: call.inputTokens,
    output_tokens: call.outputTokens,
    cached_input_tokens: 0,
    reasoning_tokens: 0,
    cost_usd: call.costUsd,
    latency_ms: Math.round(call.latencyMs),
    ttft_ms: null,
  };
  await db.query(
    `with bumped as (
       update sessions
          set input_tokens = input_tokens + $3, output_tokens = output_tokens + $4,
              cost_usd = cost_usd + $5
        where tenant = $1 and session_id = $2
       returning tenant, session_id, agent
     )
     ${insertUsageSql('bumped', '$6', '$7::text')}`,
    [
      call.tenant,
      call.sessionId,
      call.inputTokens,
      call.outputTokens,
      call.costUsd,
      JSON.stringify([row]),
      call.turnId,
    ],
  );
}
