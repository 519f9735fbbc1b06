import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { ParleyError } from '../errors.js';
import { httpRequests } from '../metrics.js';
import { adapterRoutes } from './adapters.js';
import { adminPlugin } from './admin.js';
import { attachmentRoutes } from './attachments.js';
import { agentRoutes } from './agents.js';
import { cancelRoutes } from './cancel.js';
import { checkpointRoutes } from './checkpoints.js';
import { inputRoutes } from './inputs.js';
import { memoryRoutes } from './memories.js';
import { missionRoutes } from './missions.js';
import type { ApiDeps } from './deps.js';
import { budgetsPlugin } from './budgets.js';
import { openaiPlugin } from './openai/routes.js';
import { aguiPlugin } from './agui/routes.js';
import { mcpPlugin } from './mcp/routes.js';
import { a2aPlugin } from './a2a/routes.js';
import { definitionsPlugin } from './definitions.js';
import { serializerCompiler, validatorCompiler } from './contract.js';
import {
  clientErrorHandler,
  frameworkErrors,
  installErrorHandler,
  installNotFound,
} from './errors.js';
import { eventRoutes } from './events.js';
import { executionRoutes } from './executions.js';
import { fileRoutes } from './files.js';
import { healthRoutes } from './health.js';
import { adminModelRoutes, modelRoutes } from './models.js';
import { openapiRoutes } from './openapi.js';
import { personalRoutes } from './personal.js';
import { panelRoutes } from './panels.js';
import { photoRoutes } from './photos.js';
import { userEventRoutes } from './userEvents.js';
import { preferenceRoutes } from './preferences.js';
import { holdRequestDeadline } from './requestDeadline.js';
import { scheduleRoutes } from './schedules.js';
import { authenticate, requireOperator } from './principal.js';
import { recordRoutes } from './routes.js';
import { installSessionAccess } from './sessionAccess.js';
import { sessionRoutes } from './sessions.js';
import { speechRoutes } from './speech.js';
import { turnRoutes } from './turns.js';
import { usageRoutes } from './usage.js';
import { webRoutes } from './web.js';
import { adminWebhookRoutes } from './webhooks.js';
import { workspaceRoutes } from './workspaces.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Probes and the OpenAPI document answer without a principal. */
    public?: boolean;
    /** Deployment-wide actions: only the operator's principal (`auth.keys[].operator`). */
    operator?: boolean;
  }
}

/**
 * The app factory (Fastify's guide): builds the HTTP API on injected storage and
 * configuration; `listen` is the caller's business, so tests can `inject` or bind port 0.
 */
export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const logger: FastifyBaseLogger = deps.log;
  const timeoutMs = deps.config.server.requestTimeoutMs;
  const app: FastifyInstance = Fastify({
    loggerInstance: logger,
    bodyLimit: deps.config.server.bodyLimitBytes,
    forceCloseConnections: true,
    // Logs method, route and status only: bodies and headers may carry secrets.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // Slow clients (a half-sent body, a drip of headers) are cut off: the whole request
    // must arrive within request_timeout_ms, its headers within 10 s of that. Node checks
    // these every connectionsCheckingInterval; a body's deadline is also held by Parley's
    // own timer (requestDeadline.ts). An SSE response is not limited by them.
    requestTimeout: timeoutMs,
    http: {
      requestTimeout: timeoutMs,
      headersTimeout: Math.min(timeoutMs, 10_000),
      connectionsCheckingInterval: Math.min(1000, Math.max(100, Math.floor(timeoutMs / 4))),
    },
    frameworkErrors,
    clientErrorHandler,
  });
  recordRoutes(app);
  // Routes declare zod schemas (contract.ts): requests are validated by them, and
  // responses are held to theirs only where the app is asked to check (the test suite).
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler(deps.checkResponses ?? false));
  app.decorateRequest('principal', undefined as never);
  installErrorHandler(app);
  installNotFound(app);
  // First hook: the body deadline is armed before anything else can answer or wait.
  holdRequestDeadline(app, timeoutMs);
  // Only JSON bodies: anything else (text/plain included) is 415 before a route runs.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit: deps.config.server.bodyLimitBytes },
    app.getDefaultJsonParser('error', 'error'),
  );

  app.addHook('onRequest', async (request, reply) => {
    void reply.header('parley-protocol-version', '1');
    void reply.header('x-content-type-options', 'nosniff');
    void reply.header('cache-control', 'no-store');
    const version = request.headers['parley-protocol-version'];
    if (version !== undefined && version !== '1') {
      throw new ParleyError(
        'unsupported_protocol_version',
        'this server speaks protocol version 1',
        { supported: [1] },
      );
    }
    if (!request.routeOptions.config.public) request.principal = authenticate(deps.config, request);
    if (request.routeOptions.config.operator) requireOperator(request.principal);
  });
  // After the principal is known, before any route runs or reads a body.
  installSessionAccess(app, deps);
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
  modelRoutes(app, deps);
  usageRoutes(app, deps);
  attachmentRoutes(app, deps);
  adapterRoutes(app, deps);
  fileRoutes(app, deps);
  memoryRoutes(app, deps);
  agentRoutes(app, deps);
  missionRoutes(app, deps);
  executionRoutes(app, deps);
  scheduleRoutes(app, deps);
  checkpointRoutes(app, deps);
  personalRoutes(app, deps);
  preferenceRoutes(app, deps);
  speechRoutes(app, deps);
  workspaceRoutes(app, deps);
  panelRoutes(app, deps);
  photoRoutes(app, deps);
  userEventRoutes(app, deps);
  webRoutes(app, deps);
  await app.register(async (admin) => {
    await adminPlugin(admin, deps);
    adminModelRoutes(admin, deps);
    adminWebhookRoutes(admin, deps);
  });
  await app.register(async (admin) => definitionsPlugin(admin, deps));
  await app.register(async (admin) => budgetsPlugin(admin, deps));
  await app.register(async (scope) => openaiPlugin(scope, deps));
  await app.register(async (scope) => aguiPlugin(scope, deps));
  await app.register(async (scope) => mcpPlugin(scope, deps));
  await app.register(async (scope) => a2aPlugin(scope, deps));
  return app;
}
