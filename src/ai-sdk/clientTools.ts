import type { UIMessage } from 'ai';
import type { ParleyClient } from '../client/index.js';
import type { ApprovalRef } from './approvals.js';

/** What the app said of a call of its own tool (`addToolOutput`), and the request it answers. */
export interface ClientToolAnswer {
  ref: ApprovalRef;
  callId: string;
  approved: boolean;
  output?: unknown;
  reason?: string;
}

/**
 * The outputs the app added to `message` (useChat's `addToolOutput`: a tool part in state
 * `output-available`, or `output-error` when it could not run it) for calls of its own
 * tools that wait in `sessionId` (input requests of kind `client_tool`, found in the
 * inbox, which lists them for the user whose turn declared them). The parts of tools
 * Parley ran carry outputs too: they wait for nothing, so they are not found.
 */
export async function clientToolAnswers(
  client: ParleyClient,
  sessionId: string,
  message: UIMessage,
  signal: AbortSignal | undefined,
): Promise<ClientToolAnswer[]> {
  const given = new Map<string, { output?: unknown; errorText?: string }>();
  for (const part of message.parts) {
    const tool = part as {
      state?: string;
      toolCallId?: string;
      output?: unknown;
      errorText?: string;
    };
    if (!tool.toolCallId) continue;
    if (tool.state === 'output-available') given.set(tool.toolCallId, { output: tool.output });
    if (tool.state === 'output-error') {
      given.set(tool.toolCallId, { errorText: tool.errorText ?? 'the tool failed' });
    }
  }
  if (given.size === 0) return [];
  const answers: ClientToolAnswer[] = [];
  let cursor: string | null = null;
  do {
    const page = await client.listInputs({ limit: 200, cursor, signal });
    for (const item of page.items) {
      const output = given.get(item.call_id);
      if (item.kind !== 'client_tool' || item.session_id !== sessionId || !output) continue;
      const ref: ApprovalRef = {
        requestId: item.request_id,
        expectedSequence: item.expected_sequence,
        kind: 'client_tool',
        turnId: item.turn_id,
      };
      answers.push(
        output.errorText === undefined
          ? { ref, callId: item.call_id, approved: true, output: output.output }
          : { ref, callId: item.call_id, approved: false, reason: output.errorText },
      );
    }
    cursor = page.next_cursor;
  } while (cursor);
  return answers;
}
