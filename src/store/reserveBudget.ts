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
}

/** A budget the call would take past its limit, with what it stands at. */
export type Breach = BudgetStanding & { amount: number };

/**
 * Reserves a model call's worst case against every budget of its tenant that applies to
 * it (tenant, the session's owner, its agent, the session; a `run` budget for this turn),
 * or nothing when any of them would go past its limit: then those budgets come back.
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
): Promise<{ reserved: boolean; breaches: Breach[] }> {
  return db.transaction(async (tx) => {
    const owner = `(select owner from sessions where session_id = $2)`;
    const locked = await tx.query(
      `select b.budget_id from budgets b where ${applicableSql('$1', '$3', '$2', owner)}
        order by b.budget_id for update`,
      [lease.tenant, lease.sessionId, call.agent],
    );
    if (locked.rowCount === 0) return { reserved: false, breaches: [] };
    const standing = standingSql(
      'b',
      { sessionId: '$2', turnId: '$4' },
      { sessionId: '$2', callKey: '$5' },
    );
    const result = await tx.query<Breach & { breached: boolean; inserted: boolean }>(
      `with standing as (
         select ${budgetColumns}, b.limit_value,
                ${standing.used} as used, ${standing.reserved} as reserved,
                case when b.metric = 'cost_usd' then $7::numeric else $6::numeric end::float8 as amount
           from budgets b
          where ${applicableSql('$1', '$3', '$2', owner)}
       ), breached as (
         select * from standing where used + reserved + amount > limit_value
       ), purged as (
         delete from budget_reservations r
          where r.tenant = $1 and not ${liveReservation('r')}
            and not (r.session_id = $2 and r.call_key = $5)
       ), inserted as (
         insert into budget_reservations (tenant, session_id, call_key, turn_id, agent, owner,
                                          lease_token, tokens, cost_usd)
         select $1, $2, $5, $4, $3, ${owner}, $8, $6, $7
          where not exists (select 1 from breached)
         on conflict (session_id, call_key) do update
            set lease_token = excluded.lease_token, tokens = excluded.tokens,
                cost_usd = excluded.cost_usd, reserved_at = now()
         returning 1
       )
       select s.budget_id, s.scope, s.scope_id, s.metric, s.period, s."limit", s.origin,
              s.updated_by, s.updated_at, s.used, s.reserved, s.amount,
              exists (select 1 from breached x where x.budget_id = s.budget_id) as breached,
              exists (select 1 from inserted) as inserted
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
      ],
    );
    const breaches = result.rows
      .filter((row) => row.breached)
      .map(({ breached: _breached, inserted: _inserted, ...budget }) => budget);
    return { reserved: result.rows[0]?.inserted === true, breaches };
  });
}
