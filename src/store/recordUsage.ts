import type { Queryable } from './db.js';

/** One provider call's usage, as the `usage` table keeps it. */
export interface UsageRecord {
  tenant: string;
  sessionId: string;
  turnId: string | null;
  agent: string;
  /** `provider/model`. */
  model: string;
  purpose: 'reply' | 'gate' | 'evaluation' | 'approval';
  outcome: 'ok' | 'failed' | 'cancelled';
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  costUsd: number;
  latencyMs: number;
  ttftMs: number | null;
}

const columns = [
  'tenant',
  'session_id',
  'turn_id',
  'agent',
  'model',
  'purpose',
  'outcome',
  'input_tokens',
  'output_tokens',
  'cached_input_tokens',
  'reasoning_tokens',
  'cost_usd',
  'latency_ms',
  'ttft_ms',
];

/**
 * Inserts usage rows on the caller's transaction (the runtime calls it inside the turn's
 * token-gated commit, so a call is billed exactly when its turn's writes apply). One
 * statement whatever the number of rows.
 */
export async function recordUsage(tx: Queryable, rows: UsageRecord[]): Promise<void> {
  if (rows.length === 0) return;
  const params: unknown[] = [];
  const tuples = rows.map((row) => {
    const values = [
      row.tenant,
      row.sessionId,
      row.turnId,
      row.agent,
      row.model,
      row.purpose,
      row.outcome,
      row.inputTokens,
      row.outputTokens,
      row.cachedInputTokens,
      row.reasoningTokens,
      row.costUsd,
      Math.round(row.latencyMs),
      row.ttftMs === null ? null : Math.round(row.ttftMs),
    ];
    const placeholders = values.map((value) => `$${params.push(value)}`);
    return `(${placeholders.join(', ')})`;
  });
  await tx.query(`insert into usage (${columns.join(', ')}) values ${tuples.join(', ')}`, params);
}
