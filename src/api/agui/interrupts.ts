import type { Interrupt } from '@ag-ui/core';
import type { InputRequiredEvent } from '../../protocol/events.js';

// A turn's input requests as AG-UI interrupts (docs/protocols.md, "AG-UI"): what a run's
// RUN_FINISHED carries, and the payload a `resume` entry brings back.

/** A Parley input request as an AG-UI interrupt (its id answers it in `resume`). */
export function interruptOf(event: InputRequiredEvent): Interrupt {
  const metadata: Record<string, unknown> = { kind: event.kind };
  for (const key of [
    'tool',
    'arguments',
    'arguments_digest',
    'provider',
    'url',
    'scope',
  ] as const) {
    if (event[key] !== undefined) metadata[key] = event[key];
  }
  return {
    id: event.request_id,
    reason: event.kind,
    message: event.prompt ?? promptOf(event),
    toolCallId: event.call_id,
    responseSchema: answerSchema(event.kind),
    ...(event.deadline_at ? { expiresAt: event.deadline_at } : {}),
    metadata,
  };
}

function promptOf(event: InputRequiredEvent): string {
  switch (event.kind) {
    case 'approval':
      return `Approve the call of ${event.tool ?? 'a tool'}?`;
    case 'budget_extension':
      return 'Grant more budget to this turn?';
    case 'reconciliation':
      return 'Did this call take effect?';
    case 'external_auth':
      return `Grant access to ${event.provider ?? 'a third party'}?`;
    case 'question':
      return 'The agent asks a question.';
    case 'client_tool':
      return `Run ${event.tool ?? 'the tool'} and return its output.`;
  }
}

/** The `payload` a resume entry brings for each kind of request. */
export function answerSchema(kind: InputRequiredEvent['kind']): Record<string, unknown> {
  if (kind === 'question') {
    return {
      type: 'object',
      properties: { answer: { type: 'string' } },
      required: ['answer'],
    };
  }
  return {
    type: 'object',
    properties: {
      approved: { type: 'boolean' },
      reason: { type: 'string' },
      ...(kind === 'external_auth' ? { credential_ref: { type: 'string' } } : {}),
    },
    required: ['approved'],
  };
}
