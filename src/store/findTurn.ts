import type { Queryable } from './db.js';

/** Where a tenant's turn is: its session, its admission's sequence, when it came. */
export interface TurnPlace {
  session_id: string;
  admitted_sequence: number;
  created_at: Date;
  /** The client's own string pairs given with the turn (an OpenAI response's metadata). */
  metadata: Record<string, string> | null;
  instructions: string | null;
  /** Deleted as an OpenAI response (the turn itself stays). */
  response_deleted: boolean;
}

/** A tenant's turn by its id (another tenant's turn is as missing as no turn). */
export async function findTurn(
  db: Queryable,
  tenant: string,
  turnId: string,
): Promise<TurnPlace | null> {
  const found = await db.query<TurnPlace>(
    `select session_id, admitted_sequence::int as admitted_sequence, created_at, metadata,
            instructions, response_deleted_at is not null as response_deleted
       from turns where tenant = $1 and turn_id = $2`,
    [tenant, turnId],
  );
  return found.rows[0] ?? null;
}
