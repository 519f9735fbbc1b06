import type { Actor, InputState } from '../protocol/events.js';
import type { Queryable } from './db.js';

export interface RequestAnswer {
  request_id: string;
  state: InputState;
  approved: boolean | null;
  response: Record<string, unknown> | null;
  actor: Actor | null;
  deadline_at: Date | null;
}

/** Where the given input requests stand (answered, expired, timed out, still pending). */
export async function readRequests(
  db: Queryable,
  requestIds: string[],
): Promise<Map<string, RequestAnswer>> {
  if (requestIds.length === 0) return new Map();
  const found = await db.query<RequestAnswer>(
    `select request_id, state, approved, response, actor, deadline_at from input_requests
      where request_id = any($1::text[])`,
    [requestIds],
  );
  return new Map(found.rows.map((row) => [row.request_id, row]));
}
