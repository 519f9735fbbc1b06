import { newEvent } from '../protocol/events.js';
import { journalEvents } from './appendEvents.js';
import type { Queryable } from './db.js';

export interface ClientState {
  tenant: string;
  /** Whose client sent it. */
  user: string;
  sessionId: string;
  /** The turn the client's request admits: the change is journaled with it. */
  turnId: string;
  /** The state the client holds (validated by the caller). */
  data: Record<string, unknown>;
  /** The agent's `initial`: the session's data while nothing has written it. */
  initial: Record<string, unknown>;
}

/**
 * A client's own copy of a session's domain state taken as the session's (AG-UI's
 * `RunAgentInput.state`, docs/protocols.md), inside the transaction that admits the
 * client's turn, before it: the session row is locked, and when the client's data differs
 * from the session's (its `initial` while unwritten) it is written whole and journaled as
 * `state_changed` (`by: user`, the user as its actor) with the turn. Writes nothing when:
 *
 * - `known`: the turn is already admitted — a retry, whose first attempt took the state;
 * - `same`: the data is the session's already;
 * - `busy`: a turn is in flight (holds the lease, or waits for a person halfway), since its
 *   commit would write over the change;
 * - `missing`: there is no such session (the admission answers for it).
 */
export async function takeClientState(
  tx: Queryable,
  input: ClientState,
): Promise<'written' | 'known' | 'same' | 'busy' | 'missing'> {
  const found = await tx.query<{ known: boolean; same: boolean; free: boolean }>(
    `select exists (select 1 from turns t where t.tenant = s.tenant and t.turn_id = $3) as known,
            coalesce(s.data, $4::jsonb) = $5::jsonb as same,
            s.lease_token is null and s.burst is null as free
       from sessions s
      where s.tenant = $1 and s.session_id = $2
        for update of s`,
    [
      input.tenant,
      input.sessionId,
      input.turnId,
      JSON.stringify(input.initial),
      JSON.stringify(input.data),
    ],
  );
  const row = found.rows[0];
  if (!row) return 'missing';
  if (row.known) return 'known';
  if (row.same) return 'same';
  if (!row.free) return 'busy';
  await tx.query('update sessions set data = $2::jsonb where session_id = $1', [
    input.sessionId,
    JSON.stringify(input.data),
  ]);
  await journalEvents(tx, input.sessionId, [
    newEvent('state_changed', input.turnId, {
      data: input.data,
      by: 'user',
      actor: { user: input.user, tenant: input.tenant },
    }),
  ]);
  return 'written';
}
