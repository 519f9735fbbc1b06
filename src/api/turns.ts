import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { triggersTurns } from '../agents/triggers.js';
import type { Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { clientKeyPattern } from '../ids.js';
import { admissionSeconds, turnsAdmitted } from '../metrics.js';
import { admitTurn, type Admission } from '../store/admitTurn.js';
import type { Queryable } from '../store/db.js';
import { admission } from '../protocol/rest.js';
import { noTelemetry } from '../telemetry/tracing.js';
import { route, routeOptions, typed } from './contract.js';
import { agentsOf, type ApiDeps } from './deps.js';
import { viewerOf } from './sessionAccess.js';
import { storableJson, text } from './validate.js';
import { checkClientTools, clientToolLimits, type ClientTool } from '../tools/clientTools.js';
import { askUserTool, mcpToolPattern } from '../tools/registry.js';

/** A tool the client declares and runs itself (checked further by checkClientTools). */
export const clientToolBody = z
  .object({
    name: text().min(1).max(64),
    description: text().max(4000).optional(),
    parameters: z.record(z.string(), z.unknown()).refine(storableJson).optional(),
  })
  .strict();

const admitBody = z
  .object({
    session_id: text().min(1).max(128).optional(),
    turn_id: z.string().regex(clientKeyPattern, 'must be 1-128 characters of A-Z a-z 0-9 _ -'),
    agent: text().min(1).max(128).optional(),
    message: text().default(''),
    option: z
      .object({ request_id: text().min(1).max(128), value: text().max(1000) })
      .strict()
      .optional(),
    attachments: z.array(text().min(1).max(128)).max(10).optional(),
    agent_revision: z.number().int().min(1).optional().meta({
      description:
        'the agent revision the client expects (`revision` of GET /api/v1/agents): the turn runs with it; another current revision is 409 agent_revision_mismatch. Part of the idempotency fingerprint',
    }),
    client_tools: z.array(clientToolBody).max(clientToolLimits.count).optional().meta({
      description:
        'tools the client runs itself: the model may call them; a call waits as an input request of kind client_tool, answered with {approved: true, response: {output}} (or approved: false with a reason). Part of the idempotency fingerprint',
    }),
  })
  .strict();

export const turnContracts = {
  admit: route({
    method: 'POST',
    url: '/api/v1/chat/turns',
    summary: 'Admit a turn; 202 once the message is durable',
    body: admitBody,
    responses: { '202': admission },
    errors: {
      '400': 'invalid_request, empty_message or malformed_json',
      '404': 'unknown_agent, session_not_found or option_not_found',
      '409':
        'turn_conflict, agent_mismatch, agent_revision_mismatch, option_locked or session_closed',
      '413': 'message_too_long or payload_too_large',
    },
  }),
};

/** What a principal admits, in whatever protocol it came (Parley's own, or an adapter's). */
export interface TurnRequest {
  turnId: string;
  sessionId: string | null;
  agent: string | null;
  message: string;
  option?: { request_id: string; value: string } | null;
  attachments?: string[];
  agentRevision?: number | null;
  instructions?: string | null;
  metadata?: Record<string, string> | null;
  /** Images carried inline (checked by the caller), stored with the turn. */
  images?: { mediaType: string; data: Uint8Array }[];
  /** Runs first in the admission's transaction (AdmitTurnInput's `guard`). */
  guard?: (tx: Queryable) => Promise<void>;
  /** Tools the client runs itself, as it sent them (checked here), and the field they came in. */
  clientTools?: { name: string; description?: string | undefined; parameters?: unknown }[];
  clientToolsField?: string;
}

/** A message a turn may carry: not empty (unless it presses an option), not too long. */
export function checkMessage(deps: ApiDeps, message: string, mayBeEmpty = false): void {
  if (message.trim().length === 0 && !mayBeEmpty) {
    throw new ParleyError('empty_message', 'message: must not be empty');
  }
  if (Buffer.byteLength(message) > deps.config.server.maxMessageBytes) {
    throw new ParleyError(
      'message_too_long',
      `message: longer than ${deps.config.server.maxMessageBytes} bytes`,
      { limit_bytes: deps.config.server.maxMessageBytes },
    );
  }
}

/**
 * The tools a client declares with a turn, checked (`checkClientTools`): none may have the
 * name of one of the agent's own tools, or one it may have (`ask_user`, any `server__tool`).
 * Adapters call it before they create anything, so bad tools write nothing.
 */
export function clientToolsFor(
  deps: ApiDeps,
  tenant: string,
  agentName: string | null,
  tools: NonNullable<TurnRequest['clientTools']>,
  field: string,
): ClientTool[] {
  const agent = agentName === null ? undefined : agentsOf(deps).get(tenant, agentName);
  return checkClientTools(
    tools,
    (name) =>
      name === askUserTool ||
      mcpToolPattern.test(name) ||
      (agent !== undefined && Object.hasOwn(agent.tools, name)),
    field,
  );
}

/**
 * Admits a turn for `principal` (PROTOCOL.md §2): the checks every protocol shares (an
 * empty or too long message, an unknown agent), then one admission statement. The same
 * path for Parley's routes and the protocol adapters; with telemetry, one `parley.turn` span
 * in the turn's trace.
 */
export async function admitForPrincipal(
  deps: ApiDeps,
  principal: Principal,
  turn: TurnRequest,
): Promise<Admission> {
  const trace = (deps.telemetry ?? noTelemetry).admission({
    tenant: principal.tenant,
    turnId: turn.turnId,
  });
  try {
    const admission = await admitChecked(deps, principal, turn);
    trace.end({ sessionId: admission.session_id, state: admission.state });
    return admission;
  } catch (error) {
    trace.fail(
      error instanceof ParleyError ? error.code : error instanceof Error ? error.name : '_OTHER',
    );
    throw error;
  }
}

async function admitChecked(
  deps: ApiDeps,
  principal: Principal,
  turn: TurnRequest,
): Promise<Admission> {
  const started = process.hrtime.bigint();
  checkMessage(deps, turn.message, Boolean(turn.option));
  if (
    turn.instructions &&
    Buffer.byteLength(turn.instructions) > deps.config.server.maxMessageBytes
  ) {
    throw new ParleyError(
      'message_too_long',
      `instructions: longer than ${deps.config.server.maxMessageBytes} bytes`,
      { limit_bytes: deps.config.server.maxMessageBytes, field: 'instructions' },
    );
  }
  const tenant = principal.tenant;
  const directory = agentsOf(deps);
  if (turn.agent !== null && !directory.get(tenant, turn.agent)) {
    throw new ParleyError('unknown_agent', `no agent named "${turn.agent}"`);
  }
  // The tenant's agents as they are now: an edit applies from the next admission.
  const agents = directory.list(tenant);
  const clientTools = clientToolsFor(
    deps,
    tenant,
    turn.agent,
    turn.clientTools ?? [],
    turn.clientToolsField ?? 'client_tools',
  );
  // A slot of this process's worker, if it has one free: the admission may claim the
  // session for it (AdmitTurnInput.claim) and the turn starts here at once.
  const slot = deps.handoff?.reserveSession(tenant) ?? null;
  let admission: Admission;
  try {
    admission = await admitTurn(deps.db, {
      tenant,
      author: principal.user,
      viewer: viewerOf(deps, principal),
      turnId: turn.turnId,
      sessionId: turn.sessionId,
      agent: turn.agent,
      defaultAgent: directory.defaultName(tenant),
      greetings: new Map(agents.map((agent) => [agent.name, agent.greeting])),
      visibilities: new Map(agents.map((agent) => [agent.name, agent.visibility])),
      message: turn.message,
      option: turn.option ?? null,
      attachments: turn.attachments ?? [],
      triggers: new Map(
        agents.map((agent) => [
          agent.name,
          triggersTurns(agent, principal, deps.config.tenancy.wildcardTriggers),
        ]),
      ),
      pendingInput: new Map(agents.map((agent) => [agent.name, agent.pendingInput])),
      agentRevision: turn.agentRevision ?? null,
      instructions: turn.instructions ?? null,
      metadata: turn.metadata ?? null,
      images: turn.images ?? [],
      ...(turn.guard ? { guard: turn.guard } : {}),
      clientTools,
      ...(slot ? { claim: slot.claim } : {}),
    });
  } catch (error) {
    slot?.release();
    throw error;
  }
  const { claimed, ...answer } = admission;
  if (claimed && slot) slot.adopt(claimed);
  else slot?.release();
  turnsAdmitted.inc();
  admissionSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
  return answer;
}

/** PROTOCOL.md §2: admission answers 202 once the message is durable, before any model work. */
export function turnRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const admit = turnContracts.admit;
  typed(app).post(admit.url, routeOptions(admit), async (request, reply) => {
    const body = request.body;
    const admission = await admitForPrincipal(deps, request.principal, {
      turnId: body.turn_id,
      sessionId: body.session_id ?? null,
      agent: body.agent ?? null,
      message: body.message,
      option: body.option ?? null,
      attachments: body.attachments ?? [],
      agentRevision: body.agent_revision ?? null,
      clientTools: body.client_tools ?? [],
    });
    return reply.status(202).send(admission);
  });
}
