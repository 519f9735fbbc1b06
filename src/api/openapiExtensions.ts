/**
 * The OpenAPI part of the protocol's extensions for clients such as the web app
 * (docs/PROTOCOL.md, "Extensions"): the approvals inbox, the agents listing, and the
 * caller's principal. Merged into the document served at /api/v1/openapi.json.
 */
const errorRef = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: errorRef } },
});
const json = (schema: object) => ({
  description: 'OK',
  content: { 'application/json': { schema } },
});

export const extensionSchemas = {
  InboxItem: {
    type: 'object',
    required: [
      'request_id',
      'session_id',
      'agent',
      'turn_id',
      'kind',
      'call_id',
      'expected_sequence',
      'created_at',
    ],
    properties: {
      request_id: { type: 'string' },
      session_id: { type: 'string' },
      session_title: { type: ['string', 'null'] },
      agent: { type: 'string' },
      turn_id: { type: 'string' },
      kind: { enum: ['approval', 'question', 'budget_extension'] },
      call_id: { type: 'string' },
      tool: { type: ['string', 'null'] },
      arguments: {},
      prompt: { type: ['string', 'null'] },
      expected_sequence: {
        type: 'integer',
        description: 'The sequence of the input_required event: what an answer must carry',
      },
      created_at: { type: 'string', format: 'date-time' },
      priority: {
        enum: ['low', 'normal', 'high', 'urgent'],
        description: "an execution's, else normal",
      },
      execution_id: { type: ['string', 'null'], description: 'the execution this request stops' },
      interrupt_to: {
        type: ['string', 'null'],
        description: "where the execution's interruptions go (user:NAME or role:NAME)",
      },
    },
  },
  Agent: {
    type: 'object',
    required: ['name', 'default', 'tools', 'approver_roles', 'may_answer', 'accepts_images'],
    properties: {
      name: { type: 'string' },
      default: { type: 'boolean', description: 'The agent a turn without `agent` gets' },
      greeting: { type: ['string', 'null'] },
      tools: {
        type: 'array',
        items: {
          type: 'object',
          properties: { name: { type: 'string' }, policy: { enum: ['allow', 'approve', 'deny'] } },
        },
      },
      approver_roles: {
        type: ['array', 'null'],
        items: { type: 'string' },
        description: 'null: any participant may answer its input requests',
      },
      may_answer: { type: 'boolean', description: 'Whether the caller may answer them' },
      accepts_images: {
        type: 'boolean',
        description:
          "Whether an image sent to this agent reaches its model (the agent's vision policy and the catalog's vision figure)",
      },
      namespace: { type: 'string' },
      is_customized: {
        type: 'boolean',
        description: "the tenant's own definition (edited or created)",
      },
      content_hash: { type: ['string', 'null'] },
      shipped_content_hash: { type: ['string', 'null'] },
      shipped_changed: { type: 'boolean' },
    },
  },
} as const;

export const extensionPaths = {
  '/api/v1/inputs': {
    get: {
      summary:
        "The approvals inbox: the tenant's pending input requests that the caller may answer (an execution's: routed to the caller), most urgent first, then oldest first",
      parameters: [
        { name: 'state', in: 'query', required: true, schema: { enum: ['pending'] } },
        {
          name: 'limit',
          in: 'query',
          schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
        },
        { name: 'cursor', in: 'query', schema: { type: 'string' } },
      ],
      responses: {
        '200': json({
          type: 'object',
          required: ['items', 'next_cursor'],
          properties: {
            items: { type: 'array', items: { $ref: '#/components/schemas/InboxItem' } },
            next_cursor: { type: ['string', 'null'] },
          },
        }),
        '400': errorResponse('invalid_request (state other than pending), invalid_cursor'),
        '401': errorResponse('unauthorized'),
      },
    },
  },
  '/api/v1/agents': {
    get: {
      summary: 'The agents a session can be created with (never their instructions)',
      parameters: [{ name: 'namespace', in: 'query', required: false, schema: { type: 'string' } }],
      responses: {
        '200': json({
          type: 'object',
          properties: {
            items: { type: 'array', items: { $ref: '#/components/schemas/Agent' } },
          },
        }),
        '401': errorResponse('unauthorized'),
      },
    },
  },
  '/api/v1/me': {
    get: {
      summary: "The caller's principal; 401 when the API key is missing or wrong",
      responses: {
        '200': json({
          type: 'object',
          required: ['tenant', 'user', 'roles', 'operator', 'mode'],
          properties: {
            tenant: { type: 'string' },
            user: { type: 'string' },
            roles: { type: 'array', items: { type: 'string' } },
            operator: {
              type: 'boolean',
              description: "the deployment operator's key (auth.keys[].operator), or dev mode",
            },
            mode: { enum: ['dev', 'keys'] },
          },
        }),
        '401': errorResponse('unauthorized'),
      },
    },
  },
} as const;
