import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { ParleyError } from '../errors.js';
import { httpRequests } from '../metrics.js';
import { adminRoutes } from './admin.js';
import { agentRoutes } from './agents.js';
import { cancelRoutes } from './cancel.js';
import { inputRoutes } from './inputs.js';
import type { ApiDeps } from './deps.js';
import { installErrorHandler } from './errors.js';
import { eventRoutes } from './events.js';
import { healthRoutes } from './health.js';
import { openapiRoutes } from './openapi.js';
import { authenticate } from './principal.js';
import { sessionRoutes } from './sessions.js';
import { turnRoutes } from './turns.js';
import { webRoutes } from './web.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Probes and the OpenAPI document answer without a principal. */
    public?: boolean;
  }
}

/**
 * The app factory (Fastify's guide): builds the HTTP API on injected storage and
 * configuration; `listen` is the caller's business, so tests can `inject` or bind port 0.
 */
export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const logger: FastifyBaseLogger = deps.log;
  const app: FastifyInstance = Fastify({
    loggerInstance: logger,
    bodyLimit: deps.config.server.bodyLimitBytes,
    forceCloseConnections: true,
    // Logs method, route and status only: bodies and headers may carry secrets.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
  });
  app.decorateRequest('principal', undefined as never);
  installErrorHandler(app);

  app.addHook('onRequest', async (request, reply) => {
    void reply.header('parley-protocol-version', '1');
    const version = request.headers['parley-protocol-version'];
    if (version !== undefined && version !== '1') {
      throw new ParleyError(
        'unsupported_protocol_version',
        'this server speaks protocol version 1',
        {
          supported: [1],
        },
      );
    }
    if (!request.routeOptions.config.public) request.principal = authenticate(deps.config, request);
  });
  app.addHook('onResponse', async (request, reply) => {
    httpRequests.inc({
      route: request.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    });
  });

  healthRoutes(app, deps);
  openapiRoutes(app);
  sessionRoutes(app, deps);
  turnRoutes(app, deps);
  eventRoutes(app, deps);
  cancelRoutes(app, deps);
  inputRoutes(app, deps);
  adminRoutes(app, deps);
  agentRoutes(app, deps);
  webRoutes(app, deps);
  return app;
}
