import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { clientKeyPattern } from '../ids.js';
import { cancelTurn } from '../store/cancelTurn.js';
import { cancelResult } from '../protocol/rest.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { pathId } from './validate.js';

const cancelBody = z
  .object({
    command_id: z.string().regex(clientKeyPattern, 'must be 1-128 characters of A-Z a-z 0-9 _ -'),
  })
  .strict();

export const cancelContracts = {
  cancel: route({
    method: 'POST',
    url: '/api/v1/chat/sessions/:sessionId/turns/:turnId/cancel',
    summary: 'Cancel accepted work, idempotent by command_id (cooperative for a running turn)',
    body: cancelBody,
    responses: { '200': cancelResult },
    errors: {
      '400': 'invalid_request',
      '404': 'session_not_found or turn_not_found',
      '409': 'command_conflict',
    },
  }),
};

/** PROTOCOL.md §5: cancel accepted work, idempotent by command_id. Closing a stream never cancels. */
export function cancelRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const cancel = cancelContracts.cancel;
  typed(app).post(cancel.url, routeOptions(cancel), async (request) => {
    const sessionId = request.session.session_id;
    const turnId = pathId(request.params.turnId, 'turn_id');
    const body = request.body;
    return cancelTurn(deps.db, {
      tenant: request.principal.tenant,
      sessionId,
      turnId,
      commandId: body.command_id,
      actor: { user: request.principal.user, tenant: request.principal.tenant },
    });
  });
}
