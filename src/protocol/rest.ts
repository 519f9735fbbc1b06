import { z } from 'zod';

/**
 * The REST resources of PROTOCOL.md §1, §2, §4 and §5, declared once: the server's route
 * schemas (src/api) validate and document them, and `parley/client` takes its types from
 * them (type imports only, so the browser bundle carries no zod). Names given with
 * `.meta({id})` become the OpenAPI document's `components.schemas`.
 */

/** A timestamp as the wire carries it: ISO 8601 in UTC. */
export const timestamp = z.string().meta({ format: 'date-time' });

export const visibility = z.enum(['private', 'tenant', 'room']).meta({
  description:
    'private: owner and the agent approvers; tenant: every principal of the tenant; room: owner and members. Admins see every session.',
});

export const sessionState = z.enum([
  'idle',
  'queued',
  'running',
  'input_required',
  'parked',
  'closed',
]);

export const usageTotals = z.object({
  input_tokens: z.number(),
  output_tokens: z.number(),
  cost_usd: z.number(),
});

/** The oldest pending input request of a session, as its projection shows it. */
export const pendingInput = z.looseObject({
  request_id: z.string(),
  kind: z.string(),
  expected_sequence: z.number(),
  arguments_digest: z.string().nullable().optional(),
  deadline_at: z.string().nullable().optional(),
  escalated_to: z.array(z.string()).optional().meta({
    description: 'whom its escalation chain added to its audience so far',
  }),
  state: z.string().optional(),
  provider: z.string().nullable().optional(),
  url: z.string().nullable().optional(),
});

/** A turn's state in the journal. */
export const turnState = z.enum(['queued', 'running', 'done', 'error', 'cancelled']);
export type TurnState = z.infer<typeof turnState>;

/** The session projection (the resync point): `latest_sequence` is the cursor to resume from. */
export const session = z
  .object({
    session_id: z.string(),
    agent: z.string(),
    title: z.string().nullable(),
    owner: z.string().nullable().meta({
      description:
        'Who created it (a user; a platform author; an execution user). Null for sessions made before sessions had owners.',
    }),
    visibility,
    members: z.array(z.string()).meta({ description: 'Users who see a room besides its owner.' }),
    workspace_id: z.string().nullable().meta({
      description: 'The workspace it is grouped in (null: none); not who may see it.',
    }),
    state: sessionState,
    latest_sequence: z.number().int(),
    earliest_sequence: z.number().int(),
    current_turn: z.object({ turn_id: z.string(), state: turnState }).nullable(),
    pending_input: pendingInput.nullable(),
    queued_turns: z.number().int(),
    usage: usageTotals,
    data: z.record(z.string(), z.unknown()).nullable().meta({
      description:
        "The session's domain state (its agent's `state.schema`); `state` is the lifecycle state. Null until a turn, an option or an admin first writes it (the agent's `state.initial` applies until then).",
    }),
    result: z.unknown().nullable().meta({
      description: 'What the session produced (set by `update_state` or an option effect).',
    }),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Session' });

/** A durable transcript message (GET …/messages), newest first. */
export const transcriptMessage = z
  .object({
    id: z.string(),
    role: z.enum(['user', 'assistant', 'system']),
    author: z.string(),
    // Optional for clients of servers older than the profile; this server always sends them.
    author_display_name: z.string().nullable().optional().meta({
      description: "a person's message: the author's display name (PATCH /api/v1/me), else null",
    }),
    author_avatar_url: z
      .string()
      .nullable()
      .optional()
      .meta({ description: "a person's message: the author's avatar URL, else null" }),
    content: z.string(),
    attachments: z.array(z.string()).optional().meta({
      description:
        "a person's message with images: their attachment ids (GET …/attachments/{id}); absent without",
    }),
    turn_id: z.string().nullable(),
    sequence: z.number().int(),
    created_at: timestamp,
    usage: usageTotals
      .optional()
      .meta({ description: "A reply's cost: the provider calls of the turn it answers." }),
  })
  .meta({ id: 'Message' });

/** The 202 answer of POST /api/v1/chat/turns. `stored`: kept, but no turn runs. */
export const admission = z
  .object({
    session_id: z.string(),
    turn_id: z.string(),
    sequence: z.number().int(),
    state: z.enum(['accepted', 'stored']),
  })
  .meta({ id: 'Admission' });

export const cancelResult = z.object({
  result: z.enum(['cancelled', 'duplicate', 'too_late']),
  state: z.union([turnState, z.literal('cancelling')]),
  sequence: z.number().int(),
});

export const inputAnswer = z.object({ state: z.literal('accepted'), sequence: z.number().int() });

/** A page of a list: `next_cursor` is null on the last page. */
export function page<Item extends z.ZodType>(item: Item) {
  return z.object({ items: z.array(item), next_cursor: z.string().nullable() });
}

export type SessionState = z.infer<typeof sessionState>;
export type Visibility = z.infer<typeof visibility>;
export type PendingInput = z.infer<typeof pendingInput>;
export type SessionProjection = z.infer<typeof session>;
export type TranscriptMessage = z.infer<typeof transcriptMessage>;
export type Admission = z.infer<typeof admission>;
export type CancelResult = z.infer<typeof cancelResult>;
export type InputAnswer = z.infer<typeof inputAnswer>;
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** An agent as GET /api/v1/agents describes it (an extension; never its instructions). */
export const agentInfo = z
  .object({
    name: z.string(),
    namespace: z.string(),
    icon: z.string().nullable().meta({
      description: 'its picture: an https URL or a data: URL of a png, jpeg, webp or gif image',
    }),
    voice: z.string().meta({
      description:
        'the voice its messages are read aloud in (GET /api/v1/voices): its own, else speech.default_voice',
    }),
    default: z.boolean().meta({ description: 'The agent a turn without `agent` gets' }),
    model: z.string(),
    greeting: z.string().nullable(),
    skills: z.array(z.string()),
    tools: z.array(z.object({ name: z.string(), policy: z.enum(['allow', 'approve', 'deny']) })),
    approver_roles: z
      .array(z.string())
      .nullable()
      .meta({ description: 'null: any participant may answer its input requests' }),
    may_answer: z.boolean().meta({ description: 'Whether the caller may answer them' }),
    accepts_images: z.boolean().meta({
      description:
        "Whether an image sent to this agent reaches its model (the agent's vision policy and the catalog's vision figure)",
    }),
    is_customized: z
      .boolean()
      .meta({ description: "the tenant's own definition (edited or created)" }),
    content_hash: z.string().nullable(),
    revision: z.number().int().nullable().meta({
      description:
        "the definition's revision, which a turn records when it starts (`turn_started.agent_revision`) and an admission may name (`agent_revision`); null without stored definitions",
    }),
    shipped_content_hash: z.string().nullable(),
    shipped_changed: z.boolean(),
  })
  .meta({ id: 'Agent' });

/** The caller's principal (GET /api/v1/me, an extension). */
export const me = z.object({
  tenant: z.string(),
  user: z.string(),
  roles: z.array(z.string()),
  operator: z.boolean().meta({
    description: "the deployment operator's key (auth.keys[].operator), or dev mode",
  }),
  mode: z.enum(['dev', 'keys']),
  display_name: z.string().nullable().meta({ description: 'as people see the user (PATCH)' }),
  avatar_url: z.string().nullable().meta({ description: 'an https URL of their picture' }),
});

/** The caller's preferences (GET | PUT /api/v1/me/preferences, an extension). */
export const preferences = z
  .object({
    workspace_id: z.string().nullable().meta({
      description: 'the active workspace (one the caller is a member of): it filters the desktop',
    }),
    active_agent: z.string().nullable(),
    active_session_id: z.string().nullable(),
    system_voice: z.string().nullable(),
    desktop: z.record(z.string(), z.unknown()),
    language: z.string().nullable().meta({ description: 'a BCP 47 tag, canonical' }),
    timezone: z.string().nullable().meta({ description: 'an IANA time zone' }),
  })
  .meta({ id: 'Preferences' });

/** A voice of the catalog (GET /api/v1/voices, an extension). */
export const voice = z
  .object({
    id: z.string().meta({ description: '<provider>/<key>' }),
    name: z.string(),
    provider: z.string(),
    key: z.string(),
    language: z.string(),
    locale: z.string(),
    gender: z.string(),
    quality: z.string(),
  })
  .meta({ id: 'Voice' });
export type VoiceInfo = z.infer<typeof voice>;

export type AgentInfo = z.infer<typeof agentInfo>;
export type Me = z.infer<typeof me>;
export type Preferences = z.infer<typeof preferences>;

/** A workspace as its members see it (GET /api/v1/workspaces, an extension). */
export const workspaceView = z
  .object({
    workspace_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    members: z.object({ roles: z.array(z.string()), users: z.array(z.string()) }).meta({
      description:
        'who is a member: a principal with one of the roles, or the user; both empty: the whole tenant (admins are members of every workspace)',
    }),
    created_by: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Workspace' });
export type WorkspaceInfo = z.infer<typeof workspaceView>;

export const budgetScope = z.enum(['tenant', 'user', 'agent', 'session', 'execution']);
export const budgetMetric = z.enum(['cost_usd', 'tokens', 'tool_calls', 'wall_ms']);
export const budgetPeriod = z.enum(['day', 'month', 'run']);

/** A spending budget as GET /api/v1/budgets shows it (an extension; admins). */
export const budgetView = z
  .object({
    budget_id: z.string(),
    scope: budgetScope,
    scope_id: z.string().nullable(),
    metric: budgetMetric,
    period: budgetPeriod,
    limit: z.number(),
    used: z.number().nullable().meta({
      description: 'in the current period (null for a run budget: each turn has its own)',
    }),
    reserved: z.number().meta({ description: 'worst cases of model calls in flight' }),
    origin: z.enum(['config', 'api']),
    updated_by: z.string().nullable(),
    updated_at: timestamp,
  })
  .meta({ id: 'Budget' });
export type BudgetInfo = z.infer<typeof budgetView>;

/** A photo of the caller's library (GET /api/v1/photos, an extension); its bytes apart. */
export const photoView = z
  .object({
    photo_id: z.string(),
    owner: z.string(),
    origin: z.enum(['upload', 'generated']),
    title: z.string().nullable(),
    source: z.record(z.string(), z.unknown()).meta({
      description:
        'where it came from: `{session_id, attachment_id}` for a chat upload, `{session_id, turn_id, tool_call_id, model, prompt}` for a generated image, `{}` for a direct upload',
    }),
    media_type: z.string(),
    size: z.number().int().meta({ description: 'bytes' }),
    created_at: timestamp,
    updated_at: timestamp,
    content_url: z.string().meta({ description: 'where its bytes are served' }),
  })
  .meta({ id: 'Photo' });
export type PhotoInfo = z.infer<typeof photoView>;
