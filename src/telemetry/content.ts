import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { ChatReply } from './tracing.js';

/**
 * Message content in the GenAI semantic conventions' JSON shapes (semconv 1.38:
 * `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`), only
 * ever built when `telemetry.capture_content` is on. Files (images) are described by their
 * media type, never copied.
 */
type Part =
  | { type: 'text'; content: string }
  | { type: 'reasoning'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: unknown }
  | { type: 'tool_call_response'; id: string; response: unknown }
  | { type: 'blob'; mime_type: string; modality: string; content: string };

interface Message {
  role: string;
  parts: Part[];
  finish_reason?: string;
}

export function systemInstructions(prompt: LanguageModelV3Prompt): string | null {
  const parts: Part[] = prompt.flatMap((message) =>
    message.role === 'system' ? [{ type: 'text' as const, content: message.content }] : [],
  );
  return parts.length === 0 ? null : JSON.stringify(parts);
}

export function inputMessages(prompt: LanguageModelV3Prompt): string {
  const messages: Message[] = [];
  for (const message of prompt) {
    if (message.role === 'system') continue;
    const parts: Part[] = [];
    for (const part of message.content) {
      switch (part.type) {
        case 'text':
          parts.push({ type: 'text', content: part.text });
          break;
        case 'reasoning':
          parts.push({ type: 'reasoning', content: part.text });
          break;
        case 'file':
          parts.push({
            type: 'blob',
            mime_type: part.mediaType,
            modality: part.mediaType.split('/')[0] ?? 'file',
            content: '',
          });
          break;
        case 'tool-call':
          parts.push({
            type: 'tool_call',
            id: part.toolCallId,
            name: part.toolName,
            arguments: part.input,
          });
          break;
        case 'tool-result':
          parts.push({ type: 'tool_call_response', id: part.toolCallId, response: part.output });
          break;
        default:
          break;
      }
    }
    messages.push({ role: message.role, parts });
  }
  return JSON.stringify(messages);
}

export function outputMessages(reply: ChatReply, finishReason: string): string {
  const parts: Part[] = [];
  if (reply.reasoning !== '') parts.push({ type: 'reasoning', content: reply.reasoning });
  if (reply.text !== '') parts.push({ type: 'text', content: reply.text });
  for (const call of reply.calls) {
    parts.push({ type: 'tool_call', id: call.call_id, name: call.tool, arguments: call.arguments });
  }
  return JSON.stringify([{ role: 'assistant', parts, finish_reason: finishReason }]);
}
