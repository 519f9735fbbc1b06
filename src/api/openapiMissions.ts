/**
 * The OpenAPI paths of missions (missions, executions, schedules, checkpoints, fork,
 * rewind, personal sessions, agents and missions at runtime), merged into openapi.ts.
 */
const error = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: error } },
});
const json = (schema: object, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});
const body = (schema: object) => ({
  required: true,
  content: { 'application/json': { schema } },
});
const pathParam = (name: string) => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string' },
});
const query = (name: string, schema: object) => ({ name, in: 'query', required: false, schema });
const clientKey = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$' };
const statuses = [
  'starting',
  'running',
  'success',
  'interrupted',
  'cancelled',
  'timeout',
  'error',
  'waiting',
  'blocked',
  'limit_reached',
];
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const page = (item: string) =>
  json({
    type: 'object',
    properties: {
      items: { type: 'array', items: ref(item) },
      next_cursor: { type: ['string', 'null'] },
    },
  });
const commandAnswer = json({
  type: 'object',
  properties: {
    result: { enum: ['cancelled', 'unblocked', 'duplicate', 'too_late'] },
    status: { enum: [...statuses, 'cancelling'] },
  },
});
const definitionOrigin = {
  is_customized: {
    type: 'boolean',
    description: "the tenant's own definition (edited or created)",
  },
  content_hash: { type: ['string', 'null'] },
  shipped_content_hash: { type: ['string', 'null'] },
  shipped_changed: {
    type: 'boolean',
    description: 'customized, and the configuration ships another version since',
  },
};
const definitionView = json({
  type: 'object',
  properties: {
    name: { type: 'string' },
    namespace: { type: 'string' },
    ...definitionOrigin,
    updated_at: { type: 'string', format: 'date-time' },
    updated_by: { type: ['string', 'null'] },
    refused: {
      type: ['string', 'null'],
      description:
        "why this tenant's stored definition is not used (it no longer passes the operator's checks); null when it is",
    },
    definition: { type: 'object', description: "the configuration file's shape, defaults applied" },
  },
});

export const missionSchemas = {
  Execution: {
    type: 'object',
    required: [
      'execution_id',
      'mission',
      'agent',
      'user',
      'session_id',
      'status',
      'loop_status',
      'iteration',
      'max_iterations',
      'next_run_at',
      'loop_decision',
      'result',
      'created_at',
      'updated_at',
    ],
    properties: {
      execution_id: { type: 'string' },
      mission: { type: 'string' },
      agent: { type: 'string' },
      user: { type: 'string' },
      session_id: { type: 'string', description: 'its events stream over this session' },
      status: { enum: statuses },
      loop_status: {
        enum: [
          'idle',
          'running',
          'evaluating',
          'waiting',
          'blocked',
          'completed',
          'failed',
          'limit_reached',
          null,
        ],
      },
      iteration: { type: 'integer' },
      max_iterations: { type: 'integer' },
      next_run_at: { type: ['string', 'null'], format: 'date-time' },
      loop_decision: {
        type: ['object', 'null'],
        properties: {
          decision: { enum: ['continue', 'complete', 'blocked'] },
          reason: { type: 'string' },
          iteration: { type: 'integer' },
        },
      },
      result: {
        description:
          '{content} of the last reply, {error: {code, message}}, or {threads: [...]} of a fan-out',
      },
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
    },
  },
  Mission: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      namespace: { type: 'string' },
      agent: { type: 'string' },
      loop: { type: 'boolean' },
      max_iterations: { type: 'integer' },
      loop_delay_seconds: { type: 'number' },
      input_schema: { type: ['object', 'null'] },
      interrupt_to: { type: ['string', 'null'] },
      priority: { enum: ['low', 'normal', 'high', 'urgent'] },
      timeout_seconds: { type: ['number', 'null'] },
      ...definitionOrigin,
    },
  },
  Checkpoint: {
    type: 'object',
    properties: {
      sequence: { type: 'integer', description: "the done event's sequence" },
      turn_ids: { type: 'array', items: { type: 'string' } },
      message_id: { type: ['string', 'null'] },
      transcript_position: { type: 'integer' },
      usage: {
        type: 'object',
        properties: {
          input_tokens: { type: 'integer' },
          output_tokens: { type: 'integer' },
          cost_usd: { type: 'number' },
        },
      },
      rewound: { type: 'boolean' },
      at: { type: 'string', format: 'date-time' },
    },
  },
} as const;

export const missionPaths = {
  '/api/v1/missions': {
    get: {
      summary: "The tenant's missions (never their prompts)",
      parameters: [query('namespace', { type: 'string' })],
      responses: {
        '200': json({
          type: 'object',
          properties: { items: { type: 'array', items: ref('Mission') } },
        }),
      },
    },
  },
  '/api/v1/missions/{name}/executions': {
    post: {
      summary: 'Dispatch an execution; 202 once durable; idempotent by execution_id',
      parameters: [pathParam('name')],
      requestBody: body({
        type: 'object',
        required: ['execution_id'],
        properties: {
          execution_id: clientKey,
          agent: { type: 'string' },
          input: { type: 'object', description: "checked against the mission's input_schema" },
          threads: {
            type: 'array',
            items: {
              type: 'object',
              properties: { agent: { type: 'string' }, input: { type: 'object' } },
            },
          },
          priority: { enum: ['low', 'normal', 'high', 'urgent'] },
          timeout_seconds: { type: 'number' },
        },
      }),
      responses: {
        '202': json(ref('Execution'), 'Accepted'),
        '400': errorResponse('invalid_request, invalid_input'),
        '404': errorResponse('mission_not_found, unknown_agent'),
        '409': errorResponse('execution_conflict'),
      },
    },
  },
  '/api/v1/missions/{name}': {
    get: {
      summary: "A mission's definition (admin)",
      parameters: [pathParam('name')],
      responses: {
        '200': definitionView,
        '403': errorResponse('forbidden'),
        '404': errorResponse('mission_not_found'),
      },
    },
    put: {
      summary: "Set the tenant's own definition of a mission (admin): customized, or created",
      parameters: [pathParam('name')],
      requestBody: body({
        type: 'object',
        description: "a mission in the configuration file's shape",
      }),
      responses: {
        '200': definitionView,
        '400': errorResponse(
          'invalid_definition (names the key; a number above its tenant ceiling names the ceiling)',
        ),
        '403': errorResponse(
          'forbidden (not an admin), or operator_only_key: a key only the operator sets (`key`: its path in the definition)',
        ),
      },
    },
    delete: {
      summary: "Delete the tenant's own definition (admin): the shipped one is restored",
      parameters: [pathParam('name')],
      responses: {
        '200': definitionView,
        '403': errorResponse('forbidden'),
        '404': errorResponse('mission_not_found'),
        '409': errorResponse('not_customized'),
      },
    },
  },
  '/api/v1/executions': {
    get: {
      summary: "The tenant's executions, newest first",
      parameters: [
        query('mission', { type: 'string' }),
        query('status', { enum: statuses }),
        query('user', { type: 'string' }),
        query('limit', { type: 'integer', minimum: 1, maximum: 200, default: 50 }),
        query('cursor', { type: 'string' }),
      ],
      responses: {
        '200': page('Execution'),
        '400': errorResponse('invalid_request, invalid_cursor'),
      },
    },
  },
  '/api/v1/executions/{execution_id}': {
    get: {
      summary: "An execution's projection",
      parameters: [pathParam('execution_id')],
      responses: { '200': json(ref('Execution')), '404': errorResponse('execution_not_found') },
    },
  },
  '/api/v1/executions/{execution_id}/cancel': {
    post: {
      summary: 'Cancel an execution (durable, idempotent by command_id; its running turn too)',
      parameters: [pathParam('execution_id')],
      requestBody: body({
        type: 'object',
        required: ['command_id'],
        properties: { command_id: clientKey },
      }),
      responses: {
        '200': commandAnswer,
        '404': errorResponse('execution_not_found'),
        '409': errorResponse('command_conflict'),
      },
    },
  },
  '/api/v1/executions/{execution_id}/unblock': {
    post: {
      summary: 'Let a blocked loop go on; the note reaches its next iteration and evaluation',
      parameters: [pathParam('execution_id')],
      requestBody: body({
        type: 'object',
        properties: {
          command_id: {
            ...clientKey,
            description:
              'idempotency key, as for cancel; without one the server makes one and a retry is a second command',
          },
          note: { type: 'string' },
        },
      }),
      responses: {
        '200': commandAnswer,
        '403': errorResponse('forbidden (not where its interruptions go)'),
        '404': errorResponse('execution_not_found'),
        '409': errorResponse('execution_not_blocked, command_conflict'),
      },
    },
  },
  '/api/v1/schedules': {
    get: {
      summary: "The tenant's schedules with their next fire times",
      responses: {
        '200': json({
          type: 'object',
          properties: { items: { type: 'array', items: { type: 'object' } } },
        }),
      },
    },
  },
  '/api/v1/chat/sessions/{session_id}/checkpoints': {
    get: {
      summary: "A session's checkpoints: every done, with transcript position and usage so far",
      parameters: [
        pathParam('session_id'),
        query('limit', { type: 'integer', minimum: 1, maximum: 200, default: 50 }),
        query('cursor', { type: 'string' }),
      ],
      responses: { '200': page('Checkpoint'), '404': errorResponse('session_not_found') },
    },
  },
  '/api/v1/chat/sessions/{session_id}/fork': {
    post: {
      summary: "A new session whose transcript is this one's up to a checkpoint",
      parameters: [pathParam('session_id')],
      requestBody: body({
        type: 'object',
        required: ['at_sequence'],
        properties: { at_sequence: { type: 'integer' }, title: { type: 'string' } },
      }),
      responses: {
        '201': json({ $ref: '#/components/schemas/Session' }, 'Created'),
        '404': errorResponse('session_not_found, checkpoint_not_found'),
      },
    },
  },
  '/api/v1/chat/sessions/{session_id}/rewind': {
    post: {
      summary: "Journal `rewound`: the next turn's prompt starts from that checkpoint",
      parameters: [pathParam('session_id')],
      requestBody: body({
        type: 'object',
        required: ['to_sequence'],
        properties: { to_sequence: { type: 'integer' } },
      }),
      responses: {
        '200': json({
          type: 'object',
          properties: {
            session_id: { type: 'string' },
            to_sequence: { type: 'integer' },
            sequence: { type: 'integer' },
          },
        }),
        '404': errorResponse('session_not_found, checkpoint_not_found'),
        '409': errorResponse('session_busy'),
      },
    },
  },
  '/api/v1/agents/{name}/personal': {
    post: {
      summary: "The caller's one active personal session with an agent (201 when created)",
      parameters: [pathParam('name')],
      responses: {
        '200': json({ $ref: '#/components/schemas/Session' }),
        '201': json({ $ref: '#/components/schemas/Session' }, 'Created'),
        '404': errorResponse('unknown_agent'),
      },
    },
  },
  '/api/v1/agents/{name}/personal/archive': {
    post: {
      summary: "Archive the caller's personal session with an agent",
      parameters: [pathParam('name')],
      responses: {
        '200': json({
          type: 'object',
          properties: { session_id: { type: 'string' }, archived: { const: true } },
        }),
        '404': errorResponse('personal_session_not_found'),
      },
    },
  },
  '/api/v1/agents/{name}': {
    get: {
      summary: "An agent's definition (admin)",
      parameters: [pathParam('name')],
      responses: {
        '200': definitionView,
        '403': errorResponse('forbidden'),
        '404': errorResponse('unknown_agent'),
      },
    },
    put: {
      summary: "Set the tenant's own definition of an agent (admin): customized, or created",
      parameters: [pathParam('name')],
      requestBody: body({
        type: 'object',
        description: "an agent in the configuration file's shape",
      }),
      responses: {
        '200': definitionView,
        '400': errorResponse(
          'invalid_definition (names the key; a number above its tenant ceiling names the ceiling)',
        ),
        '403': errorResponse(
          'forbidden (not an admin), or operator_only_key: a key only the operator sets (`key`: its path in the definition)',
        ),
      },
    },
    delete: {
      summary: "Delete the tenant's own definition (admin): the shipped one is restored",
      parameters: [pathParam('name')],
      responses: {
        '200': definitionView,
        '403': errorResponse('forbidden'),
        '404': errorResponse('unknown_agent'),
        '409': errorResponse('not_customized'),
      },
    },
  },
} as const;
