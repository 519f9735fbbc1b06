import type { FastifyInstance } from 'fastify';
import type { PlatformName } from '../config/platformTypes.js';
import { ParleyError } from '../errors.js';
import { rawBodies, route, routeOptions, type RouteContract } from './contract.js';
import type { ApiDeps } from './deps.js';

/** Each platform's inbound endpoint, as the platform's console asks for it. */
export const adapterPaths: Record<PlatformName, string> = {
  slack: '/adapters/slack/events',
  discord: '/adapters/discord/interactions',
  gchat: '/adapters/gchat/events',
  telegram: '/adapters/telegram/webhook',
  teams: '/adapters/teams/messages',
};

/** A platform's inbound endpoint: its own format, signed by it, answered its way. */
function adapterContract(platform: PlatformName): RouteContract {
  return route({
    method: 'POST',
    url: adapterPaths[platform],
    summary: `Inbound events of ${platform} (the platform's own format)`,
    description:
      "No API key: the platform's signature or token is checked on the raw body before anything is parsed. The answer is the platform's (a challenge, a PONG, an invoke response).",
    public: true,
    rawBody: { contentTypes: ['*/*'], description: "the platform's event, as it signed it" },
    responses: { '200': { description: "The platform's answer" } },
    errors: {
      '400': 'invalid_request (the platform refused the event as not valid)',
      '401': 'invalid_signature',
      '404': 'not_found (the adapter is not configured)',
      '500': 'platform_event_failed (not stored: the platform should retry)',
    },
  });
}

export const adapterContracts = Object.fromEntries(
  (Object.keys(adapterPaths) as PlatformName[]).map((name) => [name, adapterContract(name)]),
) as Record<PlatformName, RouteContract>;

/**
 * The chat platforms' inbound endpoints. They carry no API key (`public`): each is
 * authenticated by its platform's signature or token, checked on the raw body before
 * anything is parsed (a bad one is 401 and writes nothing). Registered as their own
 * plugin: a raw-body parser for every content type (Slack's button presses are form
 * posts) that the JSON routes must not inherit. A platform that is not configured is 404.
 */
export function adapterRoutes(app: FastifyInstance, deps: ApiDeps): void {
  void app.register(async (scope) => {
    rawBodies(scope, deps.config.server.bodyLimitBytes);
    for (const [name, contract] of Object.entries(adapterContracts) as [
      PlatformName,
      RouteContract,
    ][]) {
      scope.post(contract.url, routeOptions(contract), async (request, reply) => {
        const platforms = deps.platforms;
        if (!platforms?.clients.has(name)) {
          throw new ParleyError('not_found', `the ${name} adapter is not configured`);
        }
        const outcome = await platforms.handle(name, {
          headers: request.headers,
          raw: (request.body as Buffer | undefined) ?? Buffer.alloc(0),
          url: `${request.protocol}://${request.host}${request.url}`,
        });
        switch (outcome.kind) {
          case 'unknown':
            throw new ParleyError('not_found', `the ${name} adapter is not configured`);
          case 'unverified':
            throw new ParleyError(
              'invalid_signature',
              `the request is not signed by ${name} (signature or token missing or wrong)`,
            );
          case 'failed':
            request.log.error(
              { adapter: name, err: (outcome.error as Error | null)?.message },
              'platform event not stored',
            );
            throw new ParleyError(
              'platform_event_failed',
              'the event could not be stored; the platform should retry it',
            );
          case 'answered':
            if (outcome.status >= 500) {
              throw new ParleyError(
                'platform_event_failed',
                'the event could not be handled now; the platform should retry it',
              );
            }
            if (outcome.status >= 400) {
              throw new ParleyError('invalid_request', `the ${name} event is not valid`);
            }
            if (outcome.contentType) void reply.header('content-type', outcome.contentType);
            return reply.status(outcome.status).send(outcome.body);
        }
      });
    }
  });
}
