import type { Queryable } from '../../store/db.js';
import { memoryExists } from '../../store/memoryExists.js';
import { ToolError, requireScope, type Tool } from '../types.js';

/**
 * `forget {memory_id}`: buffers the deletion of one of the user's memories (committed or
 * remembered earlier in this turn); applied when the turn commits, like `remember`.
 */
export function createForget(db: Queryable): Tool {
  return {
    name: 'forget',
    description: 'Forgets one memory of the user by its memory_id (from recall or remember).',
    inputSchema: {
      type: 'object',
      properties: { memory_id: { type: 'string', minLength: 1, maxLength: 64 } },
      required: ['memory_id'],
      additionalProperties: false,
    },
    async execute(args, context) {
      const scope = requireScope('forget', context);
      const { memory_id: memoryId } = args as { memory_id: string };
      const owner = { tenant: scope.tenant, agent: scope.agent, user: scope.user };
      if (!scope.memory.holds(memoryId) && !(await memoryExists(db, owner, memoryId))) {
        throw new ToolError('not_found', `there is no memory ${memoryId} of this user`);
      }
      scope.memory.forget(memoryId);
      return { memory_id: memoryId, status: 'forgotten when this reply completes' };
    },
  };
}
