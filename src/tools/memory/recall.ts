import type { Queryable } from '../../store/db.js';
import { recallMemories } from '../../store/recallMemories.js';
import { requireScope, type Tool } from '../types.js';

export const RECALL_LIMIT = 10;

/**
 * `recall {query}`: the user's memories that match, best first (full-text search), the
 * ones this turn buffered included and the ones it forgot left out.
 */
export function createRecall(db: Queryable): Tool {
  return {
    name: 'recall',
    description:
      'Searches what you remembered about the user (full-text, any of the words). Returns ' +
      'the best matches with their memory_id.',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string', minLength: 1, maxLength: 500 } },
      required: ['query'],
      additionalProperties: false,
    },
    async execute(args, context) {
      const scope = requireScope('recall', context);
      const { query } = args as { query: string };
      const found = await recallMemories(
        db,
        { tenant: scope.tenant, agent: scope.agent, user: scope.user },
        query,
        { pending: scope.memory.pending(), forgotten: [...scope.memory.forgotten()] },
        RECALL_LIMIT,
      );
      return {
        memories: found.map((memory) => ({
          memory_id: memory.memory_id,
          text: memory.text,
          ...(memory.pending ? { pending: true } : { created_at: memory.created_at }),
        })),
      };
    },
  };
}
