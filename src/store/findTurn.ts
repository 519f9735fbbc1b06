import type { Queryable } from './db.js';

/** Where a tenant's turn is: its session, its admission's sequence, when it came. */
export interface TurnPlace {
  session_id: string;
  admitted_sequence: number;
  created_at: Date;
}

/** A tenant's turn by its id (another tenant's turn is as missing as no turn). */
export async function findTurn(
  db: Queryable,
  tenant: string,
  turnId: string,
): Promise<TurnPlace | null> {
  const found = await db.query<TurnPlace>(
    `select session_id, admitted_sequence::int as admitted_sequence, created_at
       from turns where tenant = $1 and turn_id = $2`,
    [tenant, turnId],
  );
  return found.rows[0] ?? null;
}
