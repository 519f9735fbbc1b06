/** OpenAPI paths of the tool endpoints (files, memories, agents), merged into openapi.ts. */
const error = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: error } },
});
const json = (schema: object, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});
const pathParam = (name: string) => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string' },
});
const queryParam = (name: string, schema: object, description?: string) => ({
  name,
  in: 'query',
  required: false,
  schema,
  ...(description ? { description } : {}),
});

const memory = {
  type: 'object',
  required: ['memory_id', 'agent', 'user', 'text', 'created_at'],
  properties: {
    memory_id: { type: 'string' },
    agent: { type: 'string' },
    user: { type: 'string' },
    text: { type: 'string' },
    session_id: { type: ['string', 'null'] },
    created_at: { type: 'string', format: 'date-time' },
  },
};

export const toolPaths = {
  '/api/v1/chat/sessions/{session_id}/files': {
    get: {
      summary:
        "Files in the session's working directory (what shell commands left), never contents",
      parameters: [pathParam('session_id')],
      responses: {
        '200': json({
          type: 'object',
          properties: {
            session_id: { type: 'string' },
            truncated: { type: 'boolean' },
            files: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  path: { type: 'string' },
                  type: { enum: ['file', 'directory', 'symlink', 'other'] },
                  size: { type: 'integer' },
                  modified_at: { type: 'string', format: 'date-time' },
                },
              },
            },
          },
        }),
        '404': errorResponse('session_not_found'),
      },
    },
  },
  '/api/v1/memories': {
    get: {
      summary:
        "The principal's memories, newest first (admin: ?user=NAME or ?user=* for the tenant)",
      parameters: [
        queryParam('limit', { type: 'integer', minimum: 1, maximum: 200 }),
        queryParam('cursor', { type: 'string' }),
        queryParam('agent', { type: 'string' }),
        queryParam('user', { type: 'string' }, 'admin role needed for anyone but yourself'),
      ],
      responses: {
        '200': json({
          type: 'object',
          properties: {
            items: { type: 'array', items: memory },
            next_cursor: { type: ['string', 'null'] },
          },
        }),
        '400': errorResponse('invalid_request, invalid_cursor'),
        '403': errorResponse('forbidden'),
      },
    },
  },
  '/api/v1/memories/{memory_id}': {
    delete: {
      summary: 'Delete one of your memories (admin: any of the tenant)',
      parameters: [pathParam('memory_id')],
      responses: {
        '200': json({
          type: 'object',
          properties: { memory_id: { type: 'string' }, deleted: { const: true } },
        }),
        '404': errorResponse('not_found'),
      },
    },
  },
  '/api/v1/agents/{name}/tools': {
    get: {
      summary:
        "An agent's tools with source (built-in, mcp:SERVER, skill), policy and availability, and the state of the MCP servers they come from",
      parameters: [pathParam('name')],
      responses: { '200': json({ type: 'object' }), '404': errorResponse('unknown_agent') },
    },
  },
} as const;
