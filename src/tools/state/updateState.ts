import type { AgentStateConfig } from '../../config/types.js';
import type { Queryable } from '../../store/db.js';
import { readSessionData } from '../../store/readSessionData.js';
import { ToolError, requireScope, type Tool } from '../types.js';
import { mergePatch } from './mergePatch.js';

export const updateStateTool = 'update_state';

/**
 * `update_state {set?, result?, complete?}` (docs/governance.md, "Sessions with state"):
 * changes the session's domain state, buffered like a memory write: `set` is a JSON merge
 * patch (RFC 7386) of the data as it stands (committed, or as an earlier call of this
 * turn left it), the new value must satisfy the agent's `state.schema` (else the model is
 * told why, and nothing changes), and the turn's commit writes it — a dropped, failed or
 * cancelled turn never does. `complete` closes the session with that commit. Offered to
 * agents with `state` only (tools/registry.ts passes the agent's state as its options).
 */
export function createUpdateState(db: Queryable): Tool {
  return {
    name: updateStateTool,
    // The change is buffered in the burst and written by the commit; a merge patch applied
    // again gives the same state: after a crash the call runs again.
    defaultIdempotent: true,
    description:
      "Updates this conversation's state (applied when this reply completes). `set` is a " +
      'JSON merge patch of the state (a null member removes the key); `result` records ' +
      'what the conversation produced; `complete: true` ends the conversation.',
    inputSchema: {
      type: 'object',
      properties: {
        set: { type: 'object', description: 'JSON merge patch of the state' },
        result: { description: 'any JSON value: what the conversation produced' },
        complete: { type: 'boolean', description: 'true ends the conversation' },
      },
      additionalProperties: false,
    },
    async execute(args, context) {
      const scope = requireScope(updateStateTool, context);
      const state = (context.options as { state?: AgentStateConfig | null } | null)?.state;
      if (!state) throw new ToolError('unavailable', 'this agent keeps no conversation state');
      const change = args as {
        set?: Record<string, unknown>;
        result?: unknown;
        complete?: boolean;
      };
      // Read the committed data only while the turn has buffered nothing, and take the
      // buffer again after that read: from here to changeState nothing awaits, so calls of
      // one step that run concurrently apply their patches one after the other.
      const committed = scope.memory.state()
        ? null
        : await readSessionData(db, scope.tenant, scope.sessionId);
      const current = scope.memory.state()?.data ?? committed ?? state.initial;
      const data = (change.set === undefined ? current : mergePatch(current, change.set)) as Record<
        string,
        unknown
      >;
      const invalid = state.validate(data);
      if (invalid !== null) {
        throw new ToolError(
          'invalid_arguments',
          `the new state is not valid: ${invalid}; nothing changed`,
        );
      }
      const hasResult = Object.hasOwn(change, 'result');
      scope.memory.changeState({
        data,
        ...(hasResult ? { result: change.result ?? null } : {}),
        complete: change.complete === true,
      });
      return {
        data,
        ...(hasResult ? { result: change.result ?? null } : {}),
        ...(change.complete === true ? { completed: true } : {}),
        status: 'applied when this reply completes',
      };
    },
  };
}
