import { z } from 'zod';

/**
 * The call id of a `budget_extension` request a spending budget raised (`spend_N`): only
 * whoever may raise the budget (a tenant admin) sees and answers it.
 */
export const spendingCallPrefix = 'spend_';

export function isSpendingRequest(request: { kind: string; call_id: string }): boolean {
  return request.kind === 'budget_extension' && request.call_id.startsWith(spendingCallPrefix);
}

/**
 * One pending input request in the approvals inbox (`GET /api/v1/inputs`, an extension):
 * the store builds it, the route's schema documents and checks it, `parley/client`
 * returns it, so the three cannot drift.
 */
export const inboxItem = z
  .object({
    request_id: z.string(),
    session_id: z.string(),
    session_title: z.string().nullable(),
    agent: z.string(),
    turn_id: z.string(),
    kind: z.enum([
      'approval',
      'question',
      'budget_extension',
      'reconciliation',
      'external_auth',
      'client_tool',
    ]),
    call_id: z.string(),
    tool: z.string().nullable(),
    arguments: z.unknown(),
    prompt: z.string().nullable(),
    expected_sequence: z.number().int().meta({
      description: 'The sequence of the input_required event: what an answer must carry',
    }),
    created_at: z.string().meta({ format: 'date-time' }),
    state: z
      .enum(['pending', 'answered', 'expired', 'cancelled', 'timeout', 'error'])
      .meta({ description: 'Where the request stands (the inbox lists pending ones)' }),
    resumed_at: z.string().nullable().meta({
      format: 'date-time',
      description: 'When the turn resumed after the request was resolved (null until then)',
    }),
    deadline_at: z.string().nullable().meta({
      format: 'date-time',
      description: "When the request's safe default applies if nobody answers (null: never)",
    }),
    arguments_digest: z.string().nullable().meta({
      description:
        "An approval's sha-256 (hex) of the canonical JSON of `arguments`: what an answer names to approve exactly these arguments",
    }),
    escalated_to: z.array(z.string()).meta({
      description:
        'whom its escalation chain added to its audience so far (user:NAME or role:NAME, in step order): they may answer it too',
    }),
    escalation_step: z
      .number()
      .int()
      .meta({ description: 'which step of its escalation chain it reached (0: none yet)' }),
    priority: z
      .enum(['low', 'normal', 'high', 'urgent'])
      .meta({ description: "an execution's, else normal" }),
    execution_id: z.string().nullable().meta({ description: 'the execution this request stops' }),
    interrupt_to: z.string().nullable().meta({
      description: "where the execution's interruptions go (user:NAME or role:NAME)",
    }),
    provider: z.string().nullable().meta({
      description: 'external_auth: the third party the tool needs access to (null otherwise)',
    }),
    url: z.string().nullable().meta({
      description: 'external_auth: where the person grants that access (null otherwise)',
    }),
  })
  .meta({ id: 'InboxItem' });

export type InboxItem = z.infer<typeof inboxItem>;
