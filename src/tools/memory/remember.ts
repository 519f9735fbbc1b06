import { requireScope, type Tool } from '../types.js';
import { MAX_MEMORY_CHARS } from './effects.js';

/**
 * `remember {text}`: buffers a memory of the user this turn answers. Nothing is written
 * now: the turn's commit writes it (a dropped or cancelled turn never does). The id is
 * returned at once so the model can cite or forget it within the same turn.
 */
export const remember: Tool = {
  name: 'remember',
  description:
    'Remembers a fact about the user for later conversations (stored when this reply ' +
    'completes). Keep it short and self-contained.',
  inputSchema: {
    type: 'object',
    properties: { text: { type: 'string', minLength: 1, maxLength: MAX_MEMORY_CHARS } },
    required: ['text'],
    additionalProperties: false,
  },
  async execute(args, context) {
    const scope = requireScope('remember', context);
    const { text } = args as { text: string };
    const memoryId = scope.memory.remember(text.trim());
    return { memory_id: memoryId, status: 'stored when this reply completes' };
  },
};
