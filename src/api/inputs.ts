import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { agentNamed } from '../config/types.js';
import { answerInput } from '../store/answerInput.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { pathId, storableJson, validate } from './validate.js';

const answerBody = z
  .object({
    expected_sequence: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    approved: z.boolean(),
    response: z
      .record(z.string(), z.unknown())
      .refine(storableJson, 'must not contain NUL characters or unpaired surrogates')
      .optional(),
  })
  .strict();

/** PROTOCOL.md §4: answer an approval, a question or a budget extension. */
export function inputRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post<{ Params: { sessionId: string; requestId: string } }>(
    '/api/v1/chat/sessions/:sessionId/inputs/:requestId',
    async (request) => {
      const sessionId = pathId(request.params.sessionId, 'session_id');
      const requestId = pathId(request.params.requestId, 'request_id');
      const body = validate(answerBody, request.body);
      const principal = request.principal;
      return answerInput(deps.db, {
        tenant: principal.tenant,
        sessionId,
        requestId,
        expectedSequence: body.expected_sequence,
        approved: body.approved,
        response: body.response ?? null,
        actor: { user: principal.user, tenant: principal.tenant },
        mayAnswer: (agentName) => {
          const roles = agentNamed(deps.config, agentName)?.approverRoles ?? null;
          return roles === null || roles.some((role) => hasRole(principal, role));
        },
      });
    },
  );
}
