import type { Queryable } from './db.js';
import { encodeCursor } from './listSessions.js';

/** One pending input request as the approvals inbox shows it (GET /api/v1/inputs). */
export interface PendingInputItem {
  request_id: string;
  session_id: string;
  session_title: string | null;
  agent: string;
  turn_id: string;
  kind: 'approval' | 'question' | 'budget_extension';
  call_id: string;
  tool: string | null;
  arguments: unknown;
  prompt: string | null;
  expected_sequence: number;
  created_at: string;
}

interface InputRow {
  request_id: string;
  session_id: string;
  title: string | null;
  agent: string;
  turn_id: string;
  kind: PendingInputItem['kind'];
  call_id: string;
  tool: string | null;
  arguments: unknown;
  prompt: string | null;
  expected_sequence: number;
  created_at: Date;
}

/**
 * A tenant's pending input requests, oldest first (the one waiting longest leads the
 * inbox). `hiddenAgents` are the agents whose requests the caller may not answer: the
 * filter is the same rule as the answer's 403, so the inbox lists exactly what can be
 * answered. The prompt lives in the `input_required` event, so it is read from there;
 * it is null once retention pruned that event. Request ids are ULIDs, so ordering by them
 * is ordering by creation, and the last one is an exact page cursor.
 */
export async function listInputs(
  db: Queryable,
  tenant: string,
  options: {
    hiddenAgents: string[];
    limit: number;
    /** The last request_id of the previous page. */
    cursor: string | null;
  },
): Promise<{ items: PendingInputItem[]; next_cursor: string | null }> {
  const params: unknown[] = [tenant, options.hiddenAgents, options.limit + 1];
  let after = '';
  if (options.cursor) {
    params.push(options.cursor);
    after = 'and r.request_id > $4';
  }
  const found = await db.query<InputRow>(
    `select r.request_id, r.session_id, s.title, s.agent, r.turn_id, r.kind, r.call_id, r.tool,
            r.arguments, e.payload ->> 'prompt' as prompt, r.expected_sequence, r.created_at
       from input_requests r
       join sessions s on s.session_id = r.session_id and s.tenant = r.tenant
       left join events e on e.session_id = r.session_id and e.sequence = r.expected_sequence
      where r.tenant = $1 and r.state = 'pending' and not (s.agent = any($2::text[])) ${after}
      order by r.request_id
      limit $3`,
    params,
  );
  const rows = found.rows.slice(0, options.limit);
  const last = rows[rows.length - 1];
  return {
    items: rows.map((row) => ({
      request_id: row.request_id,
      session_id: row.session_id,
      session_title: row.title,
      agent: row.agent,
      turn_id: row.turn_id,
      kind: row.kind,
      call_id: row.call_id,
      tool: row.tool,
      arguments: row.arguments,
      prompt: row.prompt,
      expected_sequence: row.expected_sequence,
      created_at: row.created_at.toISOString(),
    })),
    next_cursor: found.rows.length > options.limit && last ? encodeCursor([last.request_id]) : null,
  };
}
