import { spendingCallPrefix, type InboxItem } from '../protocol/inbox.js';
import type { Queryable } from './db.js';
import { encodeCursor } from './listSessions.js';
import { escalatedToSql, viewerParams, visibleSql, type Viewer } from './visibility.js';

/** One pending input request as the approvals inbox shows it (GET /api/v1/inputs). */
export type PendingInputItem = InboxItem;

const priorityNames: InboxItem['priority'][] = ['low', 'normal', 'high', 'urgent'];

interface InputRow {
  request_id: string;
  session_id: string;
  title: string | null;
  agent: string;
  turn_id: string;
  kind: PendingInputItem['kind'];
  call_id: string;
  tool: string | null;
  arguments: unknown;
  prompt: string | null;
  expected_sequence: number;
  created_at: Date;
  state: InboxItem['state'];
  resumed_at: Date | null;
  deadline_at: Date | null;
  arguments_digest: string | null;
  escalated_to: string[];
  escalation_step: number;
  priority: number;
  execution_id: string | null;
  route: string | null;
  provider: string | null;
  url: string | null;
}

/**
 * A tenant's pending input requests, most urgent first, then oldest first (the one waiting
 * longest leads). A call of a client's own tool is listed for the user whose client
 * declared it only. `hiddenAgents` are the agents whose requests the caller may not answer:
 * the filter is the same rule as the answer's 403, so the inbox lists exactly what can be
 * answered. An execution's requests go where its `interrupt_to` says (by default
 * its own user): they are listed for that user, or for principals with that role; those
 * routed to an agent are that agent's to answer and are listed for nobody — unless the
 * agent may not answer one (declined_by: approver_roles, human_only), which is then
 * listed for the execution's own user. The prompt
 * lives in the `input_required` event, so it is read from there; it is null once retention
 * pruned that event. Only sessions the viewer may see are listed (store/visibility.ts).
 * A request its escalation chain escalated is also listed for each audience it added
 * (whoever they name may answer it).
 * Request ids are ULIDs, so ordering by them is ordering by creation, and
 * (priority, request_id) of the last one is an exact page cursor.
 */
export async function listInputs(
  db: Queryable,
  tenant: string,
  viewer: Viewer,
  options: {
    hiddenAgents: string[];
    /** The caller: its user name and roles (`*` = every role). */
    user: string;
    roles: string[];
    /** The caller may raise spending budgets: it sees their requests (and only it does). */
    admin?: boolean;
    limit: number;
    /** The priority and request_id of the last item of the previous page. */
    cursor: { priority: number; requestId: string } | null;
  },
): Promise<{ items: PendingInputItem[]; next_cursor: string | null }> {
  const params: unknown[] = [
    tenant,
    options.hiddenAgents,
    options.limit + 1,
    options.user,
    options.roles,
    ...viewerParams(viewer),
  ];
  let after = '';
  if (options.cursor) {
    params.push(options.cursor.priority, options.cursor.requestId);
    after =
      'and (coalesce(x.priority, 1) < $10 or (coalesce(x.priority, 1) = $10 and r.request_id > $11))';
  }
  params.push(options.admin === true, `${spendingCallPrefix.replace('_', '\\_')}%`);
  const admin = `$${params.length - 1}`;
  const spending = `(r.kind = 'budget_extension' and r.call_id like $${params.length})`;
  const found = await db.query<InputRow>(
    `select r.request_id, r.session_id, s.title, s.agent, r.turn_id, r.kind, r.call_id, r.tool,
            r.arguments, e.payload ->> 'prompt' as prompt, r.expected_sequence, r.created_at,
            r.state, r.resumed_at, r.deadline_at, r.arguments_digest, r.escalated_to, r.escalation_step, coalesce(x.priority, 1) as priority, x.execution_id,
            r.provider, r.url,
            case when x.execution_id is not null
                 then coalesce(x.interrupt_to, 'user:' || x.user_name) end as route
       from input_requests r
       join sessions s on s.session_id = r.session_id and s.tenant = r.tenant
       left join executions x on x.session_id = r.session_id and x.tenant = r.tenant
       left join events e on e.session_id = r.session_id and e.sequence = r.expected_sequence
      where r.tenant = $1 and r.state = 'pending'
        and (r.kind = 'client_tool' and r.user_name = $4
             or r.kind <> 'client_tool' and (${escalatedToSql('r', '$4::text', '$5::text[]')}
             or ((not (s.agent = any($2::text[])) or ${spending})
                 and (not ${spending} or ${admin}::boolean)
                 and ${visibleSql('s', 6)}
                 and (x.execution_id is null
                      or coalesce(x.interrupt_to, 'user:' || x.user_name) = 'user:' || $4
                      or (x.interrupt_to like 'agent:%' and r.declined_by is not null
                          and x.user_name = $4)
                      or (x.interrupt_to like 'role:%'
                          and ('*' = any($5::text[])
                               or substr(x.interrupt_to, 6) = any($5::text[])))))))
        ${after}
      order by coalesce(x.priority, 1) desc, r.request_id
      limit $3`,
    params,
  );
  const rows = found.rows.slice(0, options.limit);
  const last = rows[rows.length - 1];
  return {
    items: rows.map((row) => ({
      request_id: row.request_id,
      session_id: row.session_id,
      session_title: row.title,
      agent: row.agent,
      turn_id: row.turn_id,
      kind: row.kind,
      call_id: row.call_id,
      tool: row.tool,
      arguments: row.arguments,
      prompt: row.prompt,
      expected_sequence: row.expected_sequence,
      created_at: row.created_at.toISOString(),
      state: row.state,
      resumed_at: row.resumed_at?.toISOString() ?? null,
      deadline_at: row.deadline_at?.toISOString() ?? null,
      arguments_digest: row.arguments_digest,
      escalated_to: row.escalated_to,
      escalation_step: row.escalation_step,
      priority: priorityNames[row.priority] ?? 'normal',
      execution_id: row.execution_id,
      interrupt_to: row.route,
      provider: row.provider,
      url: row.url,
    })),
    next_cursor:
      found.rows.length > options.limit && last
        ? encodeCursor([last.priority, last.request_id])
        : null,
  };
}
