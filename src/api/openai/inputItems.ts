import type { z } from 'zod';
import type { approvalResponse, functionCallOutput } from './contracts.js';

// The items of a Responses `input`: a user's message, a person's answer to an approval, the
// output of a call of one of the client's own function tools.

export function isApprovalResponse(item: unknown): item is z.output<typeof approvalResponse> {
  return (item as { type?: unknown }).type === 'mcp_approval_response';
}

export function isFunctionCallOutput(item: unknown): item is z.output<typeof functionCallOutput> {
  return (item as { type?: unknown }).type === 'function_call_output';
}

/** A function call's output as the model reads it: the text, parts joined. */
export function outputText(output: z.output<typeof functionCallOutput>['output']): string {
  if (typeof output === 'string') return output;
  return output.flatMap((part) => (part.text === undefined ? [] : [part.text])).join('\n\n');
}

/** The message a Responses `input` carries: its text, parts joined by blank lines. */
export function messageOf(
  input:
    | string
    | (
        | { content: string | ({ text: string } | { type: 'input_image' | 'input_file' })[] }
        | { type: 'mcp_approval_response' }
        | { type: 'function_call_output' }
      )[],
): string {
  if (typeof input === 'string') return input;
  return input
    .filter((item) => 'content' in item)
    .map((item) =>
      typeof item.content === 'string'
        ? item.content
        : item.content.flatMap((part) => ('text' in part ? [part.text] : [])).join('\n\n'),
    )
    .join('\n\n');
}
