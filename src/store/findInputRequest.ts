import type { Queryable } from './db.js';

/** What an answer to a request must name: the sequence and digest it was asked with. */
export interface RequestToAnswer {
  expected_sequence: number;
  arguments_digest: string | null;
  /** The turn that waits for the answer. */
  turn_id: string;
}

/** A session's input request by its id (null: none in that session of that tenant). */
export async function findInputRequest(
  db: Queryable,
  tenant: string,
  sessionId: string,
  requestId: string,
): Promise<RequestToAnswer | null> {
  const found = await db.query<RequestToAnswer>(
    `select expected_sequence::int as expected_sequence, arguments_digest, turn_id
       from input_requests where tenant = $1 and session_id = $2 and request_id = $3`,
    [tenant, sessionId, requestId],
  );
  return found.rows[0] ?? null;
}
