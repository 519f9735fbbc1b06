import type { Queryable } from './db.js';
import { usageUserSql } from './usageRows.js';

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

/** The row's columns and their SQL types: the values are read as a typed row set. */
const columns = [
  ['tenant', 'text'],
  ['session_id', 'text'],
  ['turn_id', 'text'],
  ['agent', 'text'],
  ['model', 'text'],
  ['purpose', 'text'],
  ['outcome', 'text'],
  ['input_tokens', 'bigint'],
  ['output_tokens', 'bigint'],
  ['cached_input_tokens', 'bigint'],
  ['reasoning_tokens', 'bigint'],
  ['cost_usd', 'numeric'],
  ['latency_ms', 'integer'],
  ['ttft_ms', 'integer'],
] as const;

/**
 * Inserts usage rows on the caller's transaction (the runtime calls it inside the turn's
 * token-gated commit, so a call is billed exactly when its turn's writes apply). One
 * statement whatever the number of rows; each row's user is read in it (`usageUserSql`).
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
    const placeholders = values.map(
      (value, index) => `$${params.push(value)}::${columns[index]?.[1]}`,
    );
    return `(${placeholders.join(', ')})`;
  });
  const names = columns.map(([name]) => name).join(', ');
  await tx.query(
    `insert into usage (${names}, user_name)
     select v.*, ${usageUserSql('v.tenant', 'v.session_id', 'v.turn_id')}
       from (values ${tuples.join(', ')}) as v(${names})`,
    params,
  );
}
