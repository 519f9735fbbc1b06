import type { Queryable } from './db.js';

/** A call of a client's tool, as its request stands. */
export interface ClientToolCall {
  request_id: string;
  session_id: string;
  turn_id: string;
  /** The sequence of its `input_required` event: what an answer names. */
  expected_sequence: number;
  state: string;
  response: Record<string, unknown> | null;
}

/**
 * A call of a client's tool by the model's call id (the client knows no other), in one
 * session (`{sessionId}`) or among the calls a user's clients were asked to run
 * (`{user}`: a stateless client, which names no session): the pending one if any, else the
 * latest (call ids are the model's, so a later turn may reuse one). Null: none of that
 * tenant.
 */
export async function findClientToolCall(
  db: Queryable,
  tenant: string,
  where: { sessionId: string } | { user: string },
  callId: string,
): Promise<ClientToolCall | null> {
  const [column, value] =
    'sessionId' in where ? ['session_id', where.sessionId] : ['user_name', where.user];
  const found = await db.query<ClientToolCall>(
    `select request_id, session_id, turn_id, expected_sequence::int as expected_sequence,
            state, response
       from input_requests
      where tenant = $1 and ${column} = $2 and call_id = $3 and kind = 'client_tool'
      order by (state = 'pending') desc, created_at desc
      limit 1`,
    [tenant, value, callId],
  );
  return found.rows[0] ?? null;
}
