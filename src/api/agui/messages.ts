import {
  EventType,
  type AssistantMessage,
  type Event as AgUiEvent,
  type Message,
  type ToolCall,
} from '@ag-ui/core';
import type { MessageEvent } from '../../protocol/events.js';

/**
 * A thread's messages as an AG-UI client holds them after the fold's events (what
 * `@ag-ui/client` 1.0's own apply makes of them: the same ids, contents and order), with
 * the session's transcript messages the runs do not show between them: the people's
 * messages and the greeting. A `MESSAGES_SNAPSHOT` of these leaves a client where a
 * replay of every run would have, its users' messages included.
 */
export class AgUiMessages {
  private readonly messages: Message[] = [];
  private readonly byId = new Map<string, Message>();
  private readonly calls = new Map<string, ToolCall>();

  /** A transcript message of the journal (a person's, the greeting). */
  transcript(event: MessageEvent): void {
    const { id, role, content } = event.message;
    if (role === 'user') this.push({ id, role, content });
    else if (role === 'assistant') this.push({ id, role, content });
  }

  /** The fold's events, in the order it made them. */
  apply(event: AgUiEvent): void {
    switch (event.type) {
      case EventType.TEXT_MESSAGE_START:
        if (!this.byId.has(event.messageId)) {
          this.push({ id: event.messageId, role: 'assistant', content: '' });
        }
        return;
      case EventType.TEXT_MESSAGE_CONTENT:
      case EventType.REASONING_MESSAGE_CONTENT: {
        const message = this.byId.get(event.messageId);
        if (message?.role === 'assistant' || message?.role === 'reasoning') {
          message.content = `${message.content ?? ''}${event.delta}`;
        }
        return;
      }
      case EventType.REASONING_MESSAGE_START:
        if (!this.byId.has(event.messageId)) {
          this.push({ id: event.messageId, role: 'reasoning', content: '' });
        }
        return;
      case EventType.TOOL_CALL_START: {
        if (this.calls.has(event.toolCallId)) return;
        const parent = this.parentOf(event.parentMessageId, event.toolCallId);
        const call: ToolCall = {
          id: event.toolCallId,
          type: 'function',
          function: { name: event.toolCallName, arguments: '' },
        };
        parent.toolCalls = [...(parent.toolCalls ?? []), call];
        this.calls.set(call.id, call);
        return;
      }
      case EventType.TOOL_CALL_ARGS: {
        const call = this.calls.get(event.toolCallId);
        if (call) call.function.arguments += event.delta;
        return;
      }
      case EventType.TOOL_CALL_RESULT: {
        const result: Message = {
          id: event.messageId,
          toolCallId: event.toolCallId,
          role: 'tool',
          content: event.content,
        };
        // After the assistant message that made the call and the results already there.
        const caller = this.messages.findIndex(
          (message) =>
            message.role === 'assistant' &&
            message.toolCalls?.some((call) => call.id === event.toolCallId),
        );
        if (caller === -1) {
          this.push(result);
          return;
        }
        let at = caller + 1;
        while (at < this.messages.length && this.messages[at]?.role === 'tool') at++;
        this.messages.splice(at, 0, result);
        this.byId.set(result.id, result);
        return;
      }
      default:
        return;
    }
  }

  /** The messages so far (a copy: later events do not change it). */
  list(): Message[] {
    return structuredClone(this.messages);
  }

  private push(message: Message): void {
    this.messages.push(message);
    this.byId.set(message.id, message);
  }

  /** The assistant message a tool call belongs to, made as the client makes it when none. */
  private parentOf(parentId: string | undefined, toolCallId: string): AssistantMessage {
    const found = parentId === undefined ? undefined : this.byId.get(parentId);
    if (found?.role === 'assistant') return found;
    const parent: AssistantMessage = {
      id: parentId === undefined || found ? toolCallId : parentId,
      role: 'assistant',
      toolCalls: [],
    };
    this.push(parent);
    return parent;
  }
}
