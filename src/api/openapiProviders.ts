/** The OpenAPI paths of the provider side: catalog, usage, attachments. */
const error = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: error } },
});
const json = (schema: object, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});
const path = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });
const query = (name: string, schema: object) => ({ name, in: 'query', required: false, schema });

const totals = {
  calls: { type: 'integer' },
  input_tokens: { type: 'integer' },
  output_tokens: { type: 'integer' },
  cached_input_tokens: { type: 'integer' },
  reasoning_tokens: { type: 'integer' },
  cost_usd: { type: 'number' },
};

const model = {
  type: 'object',
  properties: {
    model: { type: 'string', description: 'provider/model' },
    provider: { type: 'string' },
    model_id: { type: 'string' },
    kind: { type: 'string' },
    display_name: { type: ['string', 'null'] },
    capabilities: {
      type: 'object',
      properties: {
        tools: { type: ['boolean', 'null'] },
        vision: { type: ['boolean', 'null'] },
        reasoning: { type: ['boolean', 'null'] },
        context_window: { type: ['integer', 'null'] },
        max_output_tokens: { type: ['integer', 'null'] },
      },
    },
    source: { enum: ['listing', 'config'] },
    status: { enum: ['active', 'removed'] },
    first_seen_at: { type: 'string' },
    last_seen_at: { type: 'string' },
    removed_at: { type: ['string', 'null'] },
  },
};

export const providerPaths = {
  '/api/v1/models': {
    get: {
      summary: 'The model catalog (active models; removed ones with include_removed=true)',
      parameters: [
        query('provider', { type: 'string' }),
        query('include_removed', { enum: ['true', 'false'] }),
      ],
      responses: {
        '200': json({ type: 'object', properties: { items: { type: 'array', items: model } } }),
        '400': errorResponse('invalid_request'),
      },
    },
  },
  '/api/v1/admin/models/sync': {
    post: {
      summary:
        "Refresh the deployment-wide catalog from the providers' model lists (the operator's key only)",
      requestBody: {
        content: {
          'application/json': {
            schema: { type: 'object', properties: { provider: { type: 'string' } } },
          },
        },
      },
      responses: {
        '200': json({ type: 'object', properties: { providers: { type: 'array' } } }),
        '400': errorResponse('invalid_request'),
        '403': errorResponse("forbidden (not the operator's key)"),
      },
    },
  },
  '/api/v1/usage': {
    get: {
      summary: "Token and cost attribution for the principal's tenant (admin role)",
      parameters: [
        query('group_by', { enum: ['tenant', 'agent', 'model'], default: 'model' }),
        query('from', { type: 'string', format: 'date-time' }),
        query('to', { type: 'string', format: 'date-time' }),
      ],
      responses: {
        '200': json({
          type: 'object',
          properties: {
            group_by: { type: 'string' },
            from: { type: ['string', 'null'] },
            to: { type: ['string', 'null'] },
            items: {
              type: 'array',
              items: { type: 'object', properties: { key: { type: 'string' }, ...totals } },
            },
            total: { type: 'object', properties: totals },
          },
        }),
        '400': errorResponse('invalid_request'),
        '403': errorResponse('forbidden'),
      },
    },
  },
  '/api/v1/chat/sessions/{session_id}/attachments': {
    post: {
      summary: 'Upload an image (raw body; png, jpeg, webp or gif; magic bytes checked)',
      parameters: [path('session_id')],
      requestBody: {
        required: true,
        content: Object.fromEntries(
          ['image/png', 'image/jpeg', 'image/webp', 'image/gif'].map((type) => [
            type,
            { schema: { type: 'string', format: 'binary' } },
          ]),
        ),
      },
      responses: {
        '201': json(
          {
            type: 'object',
            properties: {
              attachment_id: { type: 'string' },
              media_type: { type: 'string' },
              bytes: { type: 'integer' },
            },
          },
          'Stored',
        ),
        '400': errorResponse('invalid_request (empty)'),
        '404': errorResponse('session_not_found'),
        '413': errorResponse('payload_too_large (limits.attachment_bytes)'),
        '415': errorResponse('unsupported_media_type (type not allowed, or bytes not of it)'),
      },
    },
  },
  '/api/v1/chat/sessions/{session_id}/attachments/{attachment_id}': {
    get: {
      summary: 'The stored image, to its tenant only',
      parameters: [path('session_id'), path('attachment_id')],
      responses: {
        '200': { description: 'The image bytes with their media type' },
        '404': errorResponse('not_found'),
      },
    },
  },
} as const;
