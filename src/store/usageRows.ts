import { newEvent, type EventData, type NewEvent } from '../protocol/events.js';

/** One provider call's usage, as its `usage` event carries it (PROTOCOL.md, extended). */
export type Usage = EventData<'usage'>;

/**
 * The user a usage row is for (its `user_name`), as SQL: the author of the turn it answers
 * (the lead turn of a burst: in a shared session, whoever asked), else the session's owner
 * (a call outside any turn); null when neither is known. Read when the row is written,
 * because the row outlives the session, its turns and its transcript.
 */
export function usageUserSql(tenant: string, sessionId: string, turnId: string): string {
  return `coalesce(
      (select m.author from messages m
        where m.tenant = ${tenant} and m.session_id = ${sessionId}
          and m.turn_id = ${turnId} and m.role = 'user'),
      (select s.owner from sessions s
        where s.session_id = ${sessionId} and s.tenant = ${tenant}))`;
}

/**
 * The SQL that bills usage rows (one per provider call, the `usage` table) from a JSON
 * parameter (`usageJson`), after a session-row update `bumped` that returned `tenant,
 * session_id, agent`: a statement that journals a step's `usage` events writes its rows in
 * the same statement, so a call is billed exactly when its step's writes apply.
 */
export function insertUsageSql(
  bumped: string,
  rows: string,
  turnId: string,
  /**
   * The user as a text parameter the caller knows (null: read as `usageUserSql` reads it).
   * Used as it is: a fallback read beside it would stay in a named statement's generic
   * plan, costed once per usage row, and keep PostgreSQL re-planning the statement.
   */
  user: string | null = null,
): string {
  const read = usageUserSql('b.tenant', 'b.session_id', turnId);
  return `insert into usage (tenant, session_id, turn_id, agent, user_name, model, purpose, outcome,
                             input_tokens, output_tokens, cached_input_tokens, reasoning_tokens,
                             cost_usd, latency_ms, ttft_ms, tool_calls, tool_ms)
    select b.tenant, b.session_id, ${turnId}, b.agent,
           ${user ?? read},
           u.model, u.purpose, u.outcome,
           u.input_tokens, u.output_tokens, u.cached_input_tokens, u.reasoning_tokens,
           u.cost_usd, u.latency_ms, u.ttft_ms, coalesce(u.tool_calls, 0), coalesce(u.tool_ms, 0)
      from ${bumped} b,
           jsonb_to_recordset(${rows}::jsonb) as u(model text, purpose text, outcome text,
             input_tokens bigint, output_tokens bigint, cached_input_tokens bigint,
             reasoning_tokens bigint, cost_usd numeric, latency_ms integer, ttft_ms integer,
             tool_calls integer, tool_ms bigint)`;
}

export function usageJson(usage: Usage[]): string {
  return JSON.stringify(usage);
}

export function sumUsage(usage: Usage[]): {
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
} {
  return usage.reduce(
    (sum, call) => ({
      input_tokens: sum.input_tokens + call.input_tokens,
      output_tokens: sum.output_tokens + call.output_tokens,
      cost_usd: sum.cost_usd + call.cost_usd,
    }),
    { input_tokens: 0, output_tokens: 0, cost_usd: 0 },
  );
}

/** One `usage` event per provider call of the burst. */
export function usageEvents(lead: string, usage: Usage[]): NewEvent[] {
  return usage.map((call) => newEvent('usage', lead, { ...call }));
}
