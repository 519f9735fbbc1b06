import {
  applicableSql,
  budgetColumns,
  liveReservation,
  standingSql,
  type BudgetStanding,
} from './budgetStanding.js';
import type { Db } from './db.js';
import type { Lease } from './types.js';

/** One model call's worst case, and who it is for. */
export interface Reservation {
  /** The call's identity: `turn:attempt:step`. */
  callKey: string;
  /** The burst's lead turn (its usage rows carry this turn id). */
  turnId: string;
  agent: string;
  tokens: number;
  costUsd: number;
  /** The most tool calls the step may ask for (0 when it is offered no tools). */
  toolCalls: number;
}

/** A budget the call would take past its limit, with what it stands at. */
export type Breach = BudgetStanding & { amount: number };

/**
 * Reserves a model call's worst case against every budget of its tenant that applies to
 * it (tenant, the session's owner, its agent, the session, its execution; a `run` budget
 * for this turn), or nothing when any of them would go past its limit: then those budgets
 * come back. Tool calls are reserved as far as they fit: the step needs room for one (if
 * it is offered tools) and holds up to its worst case, and `toolCalls` says how many of
 * its calls may run. Wall time is not reserved ahead: a step may start while its budgets
 * have time left, and its time counts from the reservation on.
 * The budgets' rows are locked first, in one order, so two reservations against one
 * budget take turns and the second reads the first's (read committed: the check is a
 * statement after the lock). The check and the insert are one statement. Reserving the
 * same call again (same `callKey`) replaces its reservation. Dead reservations of the
 * tenant (their lease is gone) are deleted on the way.
 */
export async function reserveBudget(
  db: Db,
  lease: Lease,
  call: Reservation,
): Promise<{ reserved: boolean; breaches: Breach[]; toolCalls: number }> {
  return db.transaction(async (tx) => {
    const owner = `(select owner from sessions where session_id = $2)`;
    const locked = await tx.query(
      `select b.budget_id from budgets b where ${applicableSql('$1', '$3', '$2', owner)}
        order by b.budget_id for update`,
      [lease.tenant, lease.sessionId, call.agent],
    );
    if (locked.rowCount === 0) return { reserved: false, breaches: [], toolCalls: call.toolCalls };
    const standing = standingSql(
      'b',
      { sessionId: '$2', turnId: '$4' },
      { sessionId: '$2', callKey: '$5' },
    );
    const result = await tx.query<
      Breach & { breached: boolean; inserted: boolean; tool_calls: number }
    >(
      `with standing as (
         select ${budgetColumns}, b.limit_value,
                ${standing.used} as used, ${standing.reserved} as reserved,
                (case b.metric when 'cost_usd' then $7::numeric
                               when 'tokens' then $6::numeric
                               when 'tool_calls' then least($9::numeric, 1)
                               else 0 end)::float8 as amount
           from budgets b
          where ${applicableSql('$1', '$3', '$2', owner)}
       ), breached as (
         select * from standing
          where used + reserved + amount > limit_value
             or (metric = 'wall_ms' and used + reserved >= limit_value)
       ), room as (
         select least($9::int, coalesce(min(floor(limit_value - used - reserved))::int, $9::int))
                  as tool_calls
           from standing where metric = 'tool_calls'
       ), purged as (
         delete from budget_reservations r
          where r.tenant = $1 and not ${liveReservation('r')}
            and not (r.session_id = $2 and r.call_key = $5)
       ), inserted as (
         insert into budget_reservations (tenant, session_id, call_key, turn_id, agent, owner,
                                          lease_token, tokens, cost_usd, tool_calls)
         select $1, $2, $5, $4, $3, ${owner}, $8, $6, $7, (select tool_calls from room)
          where not exists (select 1 from breached)
         on conflict (session_id, call_key) do update
            set lease_token = excluded.lease_token, tokens = excluded.tokens,
                cost_usd = excluded.cost_usd, tool_calls = excluded.tool_calls,
                reserved_at = now()
         returning 1
       )
       select s.budget_id, s.scope, s.scope_id, s.metric, s.period, s."limit", s.origin,
              s.updated_by, s.updated_at, s.used, s.reserved, s.amount,
              exists (select 1 from breached x where x.budget_id = s.budget_id) as breached,
              exists (select 1 from inserted) as inserted,
              (select tool_calls from room) as tool_calls
         from standing s order by s.budget_id`,
      [
        lease.tenant,
        lease.sessionId,
        call.agent,
        call.turnId,
        call.callKey,
        call.tokens,
        call.costUsd,
        lease.token,
        call.toolCalls,
      ],
    );
    const breaches = result.rows
      .filter((row) => row.breached)
      .map(({ breached: _breached, inserted: _inserted, tool_calls: _calls, ...budget }) => budget);
    const first = result.rows[0];
    return {
      reserved: first?.inserted === true,
      breaches,
      toolCalls: Math.max(0, first?.tool_calls ?? call.toolCalls),
    };
  });
}
