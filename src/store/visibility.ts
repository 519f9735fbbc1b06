/**
 * Who may see a session (docs/PROTOCOL.md, "Owner and visibility"), as ONE SQL predicate:
 * every list query filters with it and every single-session route checks it
 * (findVisibleSession), so the rule exists once.
 *
 * A session of the viewer's tenant is visible when
 * - the viewer is an admin (the `admin` role), or
 * - its visibility is `tenant`, or
 * - the viewer owns it, or
 * - it is a `room` that lists the viewer as a member, or
 * - the viewer is an approver of its agent (a role in the agent's non-null
 *   `approver_roles`): whoever must answer its requests sees it, or
 * - it is an execution's session whose interruptions go to the viewer (`interrupt_to`
 *   names its user or one of its roles), for the same reason, or
 * - one of its pending input requests was escalated to the viewer (`escalated_to` names
 *   its user or one of its roles), for the same reason, while it waits.
 * The tenant is the caller's own filter (every query already has it).
 */
export interface Viewer {
  user: string;
  /** Its roles (`*`: every role), for executions routed to a role. */
  roles: string[];
  admin: boolean;
  /** The agents whose non-null `approver_roles` name one of the viewer's roles. */
  approverOf: string[];
}

/**
 * The parts of Parley that act for a platform thread or an execution, not for a
 * principal of the API: they reach every session of the tenant they act in.
 */
export const trustedViewer: Viewer = { user: '', roles: [], admin: true, approverOf: [] };

/** The predicate's parameters, in the order `visibleSql` numbers them. */
export function viewerParams(viewer: Viewer): unknown[] {
  return [viewer.admin, viewer.user, viewer.approverOf, viewer.roles];
}

/**
 * The predicate over the sessions row `alias`, its four parameters numbered from `first`
 * (their values: `viewerParams`). Fixed text for fixed numbers, so a prepared statement
 * can hold it.
 */
export function visibleSql(alias: string, first: number): string {
  const admin = `$${first}::boolean`;
  const user = `$${first + 1}::text`;
  const approverOf = `$${first + 2}::text[]`;
  const roles = `$${first + 3}::text[]`;
  return `(${admin}
      or ${alias}.visibility = 'tenant'
      or ${alias}.owner = ${user}
      or (${alias}.visibility = 'room' and ${user} = any(${alias}.members))
      or ${alias}.agent = any(${approverOf})
      or exists (select 1 from executions vx
                  where vx.session_id = ${alias}.session_id
                    and (vx.interrupt_to = 'user:' || ${user}
                         or (vx.interrupt_to like 'role:%'
                             and ('*' = any(${roles})
                                  or substr(vx.interrupt_to, 6) = any(${roles})))))
      or exists (select 1 from input_requests vr
                  where vr.session_id = ${alias}.session_id and vr.state = 'pending'
                    and ${escalatedToSql('vr', user, roles)}))`;
}

/**
 * Whether the input request `alias` was escalated to the principal whose user and roles
 * are the SQL expressions `user` and `roles` (`*` among the roles: to every audience).
 */
export function escalatedToSql(alias: string, user: string, roles: string): string {
  return `(${alias}.escalated_to && (array['user:' || ${user}]
                                    || array(select 'role:' || x from unnest(${roles}) x))
           or ('*' = any(${roles}) and cardinality(${alias}.escalated_to) > 0))`;
}
