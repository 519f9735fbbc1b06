import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { answerInput } from '../store/answerInput.js';
import { listInputs } from '../store/listInputs.js';
import { decodeCursor } from '../store/listSessions.js';
import { agentsOf, type ApiDeps } from './deps.js';
import { isRoutedTo } from './executions.js';
import { hasRole, isAddressed } from './principal.js';
import { viewerOf } from './sessionAccess.js';
import { inboxItem, isSpendingRequest } from '../protocol/inbox.js';
import { inputAnswer, page } from '../protocol/rest.js';
import { route, routeOptions, typed } from './contract.js';
import { pathId, storableJson, text } from './validate.js';

const answerBody = z
  .object({
    expected_sequence: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    approved: z.boolean(),
    response: z
      .record(z.string(), z.unknown())
      .refine(storableJson, 'must not contain NUL characters or unpaired surrogates')
      .optional(),
    arguments_digest: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'must be the sha-256 hex digest of the input_required event')
      .optional()
      .meta({
        description:
          "The approval's arguments_digest as shown: a request whose arguments have another digest is 409 stale_input. Required for approvals of human_only tools",
      }),
    credential_ref: text()
      .min(1)
      .max(500)
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
      .optional()
      .meta({
        description:
          'external_auth only, required with approved: true: the reference of the credential granted (e.g. vault:path or a variable name the operator configured), stored for the user the turn acts for; never the secret itself, never journaled',
      }),
  })
  .strict();

const inboxQuery = z.object({
  state: z.literal('pending', { message: 'only state=pending can be listed' }),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: text().max(500).optional(),
});

export const inputContracts = {
  inbox: route({
    method: 'GET',
    url: '/api/v1/inputs',
    summary:
      "The approvals inbox: the tenant's pending input requests that the caller may answer (an execution's: routed to the caller), most urgent first, then oldest first",
    querystring: inboxQuery,
    responses: { '200': page(inboxItem) },
    errors: {
      '400': 'invalid_request (state other than pending), invalid_cursor',
      '401': 'unauthorized',
    },
  }),
  answer: route({
    method: 'POST',
    url: '/api/v1/chat/sessions/:sessionId/inputs/:requestId',
    summary:
      'Answer an input request (approval, question, budget extension, reconciliation, external_auth); single-use',
    body: answerBody,
    responses: { '200': inputAnswer },
    errors: {
      '400':
        'invalid_request (arguments_digest missing for an approval of a human_only tool; credential_ref missing from an external_auth approval, or given with another answer)',
      '403':
        "forbidden (not one of the agent approver_roles; a credential for another user than the turn's, unless admin)",
      '404': 'input_not_found',
      '409': 'stale_input',
    },
  }),
};

/**
 * PROTOCOL.md §4: answer an approval, a question or a budget extension; and the approvals
 * inbox (extension): every pending request of the tenant that the caller may answer, in a
 * session the caller may see.
 */
export function inputRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  api.get(inputContracts.inbox.url, routeOptions(inputContracts.inbox), async (request) => {
    const query = request.query;
    let cursor: { priority: number; requestId: string } | null = null;
    if (query.cursor !== undefined) {
      const parts = decodeCursor(query.cursor) ?? [];
      // [request_id] is the cursor of a server without priorities: every item was normal.
      const [priority, requestId] = parts.length === 1 ? [1, parts[0]] : parts;
      if (
        parts.length > 2 ||
        typeof requestId !== 'string' ||
        typeof priority !== 'number' ||
        !Number.isInteger(priority) ||
        priority < 0 ||
        priority > 3
      ) {
        throw new ParleyError('invalid_cursor', 'cursor: not a cursor this server made');
      }
      cursor = { priority, requestId: pathId(requestId, 'cursor') };
    }
    const principal = request.principal;
    // The same rule as the answer's 403 below: an agent without approver_roles lets any
    // participant answer; otherwise one of its roles is needed.
    const hiddenAgents = agentsOf(deps)
      .list(principal.tenant)
      .filter(
        (agent) =>
          agent.approverRoles !== null &&
          !agent.approverRoles.some((role) => hasRole(principal, role)),
      )
      .map((agent) => agent.name);
    return listInputs(deps.db, principal.tenant, viewerOf(deps, principal), {
      hiddenAgents,
      user: principal.user,
      roles: principal.roles,
      admin: hasRole(principal, 'admin'),
      limit: query.limit,
      cursor,
    });
  });

  api.post(
    inputContracts.answer.url,
    // A session the principal may not see: as unknown as the request (§4's first 404).
    routeOptions(inputContracts.answer, {
      missingSession: { code: 'input_not_found', message: 'no such input request' },
    }),
    async (request) => {
      const body = request.body;
      return answerForPrincipal(deps, request.principal, {
        sessionId: request.session.session_id,
        requestId: pathId(request.params.requestId, 'request_id'),
        expectedSequence: body.expected_sequence,
        approved: body.approved,
        response: body.response ?? null,
        argumentsDigest: body.arguments_digest,
        credentialRef: body.credential_ref,
      });
    },
  );
}

/** A principal's answer to an input request, in whatever protocol it came. */
export interface AnswerRequest {
  sessionId: string;
  requestId: string;
  expectedSequence: number;
  approved: boolean;
  response: Record<string, unknown> | null;
  argumentsDigest?: string | undefined;
  credentialRef?: string | undefined;
}

/**
 * Answers an input request for `principal` (PROTOCOL.md §4): who may answer which request
 * is decided here, for Parley's route and the protocol adapters alike.
 */
export function answerForPrincipal(
  deps: ApiDeps,
  principal: Principal,
  answer: AnswerRequest,
): Promise<{ state: 'accepted'; sequence: number }> {
  return answerInput(deps.db, {
    tenant: principal.tenant,
    sessionId: answer.sessionId,
    requestId: answer.requestId,
    expectedSequence: answer.expectedSequence,
    approved: answer.approved,
    response: answer.response,
    actor: { user: principal.user, tenant: principal.tenant },
    ...(answer.argumentsDigest === undefined ? {} : { argumentsDigest: answer.argumentsDigest }),
    ...(answer.credentialRef === undefined ? {} : { credentialRef: answer.credentialRef }),
    digestRequiredForHumanOnly: true,
    mayAnswer: (agentName, execution, inputRequest) => {
      // A spending budget's request goes to whoever may raise the budget.
      if (isSpendingRequest(inputRequest)) return hasRole(principal, 'admin');
      // A credential is granted by the user the turn's tools act for (or an admin).
      if (
        inputRequest.kind === 'external_auth' &&
        answer.approved &&
        inputRequest.user_name !== principal.user &&
        !hasRole(principal, 'admin')
      ) {
        return false;
      }
      // A client tool's output comes from the client of the user whose turn declared it.
      if (inputRequest.kind === 'client_tool') {
        return inputRequest.user_name === principal.user || hasRole(principal, 'admin');
      }
      // An escalated request is also its escalations' audiences' to answer.
      if (inputRequest.escalated_to.some((to) => isAddressed(principal, to))) return true;
      // An execution's request goes where its interrupt_to says (an admin may act).
      if (execution && !isRoutedTo(principal, execution)) return false;
      const roles = agentsOf(deps).get(principal.tenant, agentName)?.approverRoles ?? null;
      return roles === null || roles.some((role) => hasRole(principal, role));
    },
  });
}
