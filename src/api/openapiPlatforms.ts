import { adapterPaths } from './adapters.js';

/** The OpenAPI paths of chat platforms and outbound webhooks. */
const error = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: error } },
});

const platformEndpoint = (platform: string) => ({
  post: {
    summary: `Inbound events of ${platform} (the platform's own format)`,
    description:
      "No API key: the platform's signature or token is checked on the raw body before anything is parsed. The answer is the platform's (a challenge, a PONG, an invoke response).",
    security: [],
    responses: {
      '200': { description: "The platform's answer" },
      '401': errorResponse('invalid_signature'),
      '404': errorResponse('not_found (the adapter is not configured)'),
      '500': errorResponse('platform_event_failed (not stored: the platform should retry)'),
    },
  },
});

export const platformPaths = {
  ...Object.fromEntries(
    Object.entries(adapterPaths).map(([platform, path]) => [path, platformEndpoint(platform)]),
  ),
  '/api/v1/admin/webhooks': {
    get: {
      summary:
        "Outbound webhooks' deliveries by state and the latest dead letters, for the principal's tenant (admin role): the endpoints that name the tenant, and those of every tenant without their address",
      parameters: [
        {
          name: 'dead_limit',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 0, maximum: 500, default: 20 },
        },
      ],
      responses: {
        '200': {
          description: 'OK',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  items: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: {
                        name: { type: 'string' },
                        scope: {
                          type: 'string',
                          enum: ['tenant', 'all'],
                          description:
                            "tenant: the endpoint names this tenant; all: it receives every tenant's events (an endpoint of the operator's)",
                        },
                        url: {
                          type: ['string', 'null'],
                          description:
                            "without query or credentials; null for an endpoint of every tenant (its address is the operator's)",
                        },
                        events: { type: 'array', items: { type: 'string' } },
                        pending: { type: 'integer' },
                        delivered: { type: 'integer' },
                        dead: { type: 'integer' },
                        oldest_pending_at: { type: ['string', 'null'] },
                        last_error: { type: ['string', 'null'] },
                      },
                    },
                  },
                  dead_letters: { type: 'array', items: { type: 'object' } },
                },
              },
            },
          },
        },
        '403': errorResponse('forbidden'),
      },
    },
  },
};
