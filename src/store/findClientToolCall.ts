import type { Queryable } from './db.js';

/** A call of a client's tool, as its request stands. */
export interface ClientToolCall {
  request_id: string;
  turn_id: string;
  /** The sequence of its `input_required` event: what an answer names. */
  expected_sequence: number;
  state: string;
  response: Record<string, unknown> | null;
}

/**
 * A session's call of a client's tool by the model's call id (the client knows no other):
 * the pending one if any, else the latest (call ids are the model's, so a later turn may
 * reuse one). Null: no such call in that session of that tenant.
 */
export async function findClientToolCall(
  db: Queryable,
  tenant: string,
  sessionId: string,
  callId: string,
): Promise<ClientToolCall | null> {
  const found = await db.query<ClientToolCall>(
    `select request_id, turn_id, expected_sequence::int as expected_sequence, state, response
       from input_requests
      where tenant = $1 and session_id = $2 and call_id = $3 and kind = 'client_tool'
      order by (state = 'pending') desc, created_at desc
      limit 1`,
    [tenant, sessionId, callId],
  );
  return found.rows[0] ?? null;
}
