import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { idempotencyMetaKey, type CallOutcome } from './callTurn.js';

/**
 * The tool result of a call (a `tools/call`, or a task's `tasks/result`): the reply as
 * text, and the outcome as structured content.
 */
export function resultOf(outcome: CallOutcome): CallToolResult {
  const text =
    outcome.status === 'completed'
      ? outcome.reply
      : outcome.status === 'input_required'
        ? waitingText(outcome.request_id)
        : outcome.status === 'in_progress'
          ? `The turn is still running (turn ${outcome.turn_id}); call again with _meta["${idempotencyMetaKey}"] = "${outcome.turn_id}" and the same arguments to follow it.`
          : outcome.status === 'cancelled'
            ? 'The turn was cancelled.'
            : `The turn failed: ${outcome.error?.message ?? 'error'}`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: { ...outcome },
    ...(outcome.status === 'failed' || outcome.status === 'cancelled' ? { isError: true } : {}),
  };
}

/** What a turn waiting for a person says (a call's text, a task's status message). */
export function waitingText(requestId: string | undefined): string {
  return `The turn waits for a person in Parley's inbox (request ${requestId ?? ''}); it goes on once answered.`;
}
