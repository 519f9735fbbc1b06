import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { clientKeyPattern } from '../ids.js';
import { cancelTurn } from '../store/cancelTurn.js';
import type { ApiDeps } from './deps.js';
import { pathId, validate } from './validate.js';

const cancelBody = z
  .object({
    command_id: z.string().regex(clientKeyPattern, 'must be 1-128 characters of A-Z a-z 0-9 _ -'),
  })
  .strict();

/** PROTOCOL.md §5: cancel accepted work, idempotent by command_id. Closing a stream never cancels. */
export function cancelRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.post<{ Params: { sessionId: string; turnId: string } }>(
    '/api/v1/chat/sessions/:sessionId/turns/:turnId/cancel',
    async (request) => {
      const sessionId = request.session.session_id;
      const turnId = pathId(request.params.turnId, 'turn_id');
      const body = validate(cancelBody, request.body);
      return cancelTurn(deps.db, {
        tenant: request.principal.tenant,
        sessionId,
        turnId,
        commandId: body.command_id,
        actor: { user: request.principal.user, tenant: request.principal.tenant },
      });
    },
  );
}
