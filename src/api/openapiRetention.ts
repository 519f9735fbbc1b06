import { pruneRules } from '../retention/plan.js';
import { retainedTables } from '../retention/prune.js';

const error = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: error } },
});

/** POST /api/v1/admin/prune (docs/retention.md): its body and its per-table report. */
export const retentionPaths = {
  '/api/v1/admin/prune': {
    post: {
      summary:
        "Remove the tenant's rows older than an age, by rule (admin role; the usage rule: the operator's key); old cursors then answer 410",
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              description: 'exactly one of older_than_days and older_than_seconds',
              properties: {
                older_than_days: { type: 'number', minimum: 0 },
                older_than_seconds: { type: 'number', minimum: 0 },
                rules: {
                  type: 'array',
                  items: { enum: [...pruneRules] },
                  description: 'default ["events", "deliveries"]',
                },
                batch_size: {
                  type: 'integer',
                  minimum: 1,
                  maximum: 100000,
                  description: 'rows per statement (default retention.prune_batch_size)',
                },
              },
            },
          },
        },
      },
      responses: {
        '200': {
          description: 'What the run removed',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  pruned_events: { type: 'integer' },
                  sessions: {
                    type: 'integer',
                    description: 'sessions whose journal was cut back (earliest_sequence raised)',
                  },
                  skipped: {
                    type: 'boolean',
                    description: 'another pruner was at work: this run stopped',
                  },
                  removed: {
                    type: 'object',
                    description: 'rows removed per table',
                    properties: Object.fromEntries(
                      retainedTables.map((table) => [table, { type: 'integer' }]),
                    ),
                  },
                  batches: { type: 'integer' },
                },
              },
            },
          },
        },
        '400': errorResponse('invalid_request'),
        '403': errorResponse('forbidden'),
      },
    },
  },
};
