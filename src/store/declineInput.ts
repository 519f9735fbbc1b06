import type { Queryable } from './db.js';

/**
 * Hands a pending request routed to an agent over to people: the agent may not answer it
 * (the requesting agent's approver_roles do not name it, or the tool is human_only).
 * Idempotent: the first decline is kept; an answered request is left alone. Returns
 * whether this call declined it.
 */
export async function declineInput(
  db: Queryable,
  input: { tenant: string; requestId: string; declinedBy: string },
): Promise<boolean> {
  const result = await db.query(
    `update input_requests set declined_by = $3
      where tenant = $1 and request_id = $2 and state = 'pending' and declined_by is null`,
    [input.tenant, input.requestId, input.declinedBy],
  );
  return (result.rowCount ?? 0) > 0;
}
