import type { ParleyEvent } from '../../protocol/events.js';
import { isStorableText } from '../validate.js';

/**
 * A Parley turn seen as an OpenAI Responses API response (docs/protocols.md): a pure fold
 * over the session's journal from the turn's admission on. The same journal prefix always
 * gives the same response and the same stream events, numbered from 0, so a stream resumed
 * with `starting_after=N` continues exactly where it stopped.
 */

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled';

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: never[];
}

export interface MessageItem {
  type: 'message';
  id: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  role: 'assistant';
  content: OutputText[];
}

/** A call that waits for a person's approval, as OpenAI's MCP approval requests are shown. */
export interface ApprovalItem {
  type: 'mcp_approval_request';
  id: string;
  server_label: 'parley';
  name: string;
  arguments: string;
}

/** A call of one of the client's own function tools: the client runs it. */
export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: 'completed';
}

export type OutputItem = MessageItem | ApprovalItem | FunctionCallItem;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type ResponseObject = {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  model: string;
  output: OutputItem[];
  usage: ResponseUsage | null;
  error: { code: string; message: string } | null;
  incomplete_details: null;
  instructions: string | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  tool_choice: 'auto';
  tools: never[];
  temperature: null;
  top_p: null;
  background: boolean;
  conversation: { id: string };
  previous_response_id: string | null;
};

/** One server-sent event of a streamed response (its `type` is also the SSE `event:`). */
export type StreamEvent = { type: string; sequence_number: number } & Record<string, unknown>;

export interface ResponseIdentity {
  turnId: string;
  sessionId: string;
  /** The agent, as the client named the model. */
  model: string;
  createdAt: number;
  background: boolean;
  /** The turn's own instructions, as the request gave them. */
  instructions: string | null;
  metadata: Record<string, string>;
  previousResponseId: string | null;
}

export const responseIdOf = (turnId: string) => `resp_${turnId}`;

/** The turn id a response id names, or null for an id Parley never gave. */
export function turnIdOf(responseId: string): string | null {
  const turnId = responseId.startsWith('resp_') ? responseId.slice(5) : '';
  // Text no turn id can be (a NUL, say) names no turn; the database is not asked.
  return turnId !== '' && turnId.length <= 200 && isStorableText(turnId) ? turnId : null;
}

/** Builds the response and its stream events as the journal events arrive. */
export class ResponseFold {
  private status: ResponseStatus = 'queued';
  private lead: string | null = null;
  /** Items of earlier attempts whose text was withdrawn stay, empty and `incomplete`. */
  private items: OutputItem[] = [];
  private current: MessageItem | null = null;
  /** What the turn waits for, shown: approvals, and calls the client runs. */
  private readonly approvals = new Map<string, ApprovalItem | FunctionCallItem>();
  /** Every request of the turn a person has yet to answer (questions, budgets too). */
  private readonly waiting = new Set<string>();
  private usage: ResponseUsage | null = null;
  private error: { code: string; message: string } | null = null;
  private attempt = 0;
  readonly events: StreamEvent[] = [];

  constructor(private readonly identity: ResponseIdentity) {
    this.emit('response.created', { response: this.snapshot() });
  }

  get ended(): boolean {
    return this.status === 'completed' || this.status === 'failed' || this.status === 'cancelled';
  }

  /** The turn waits for its client to run one of the client's own tools. */
  get callsClient(): boolean {
    return [...this.approvals.values()].some((item) => item.type === 'function_call');
  }

  /** The turn ended, or waits for a person: a blocking request answers now. */
  get settled(): boolean {
    return this.ended || this.waiting.size > 0;
  }

  apply(event: ParleyEvent): void {
    if (this.ended) return;
    const turnId = this.identity.turnId;
    switch (event.type) {
      case 'turn_started':
        if (!event.turn_ids.includes(turnId)) return;
        this.lead = event.turn_id;
        if (event.attempt !== this.attempt) this.withdraw();
        this.attempt = event.attempt;
        if (this.status === 'queued') {
          this.status = 'in_progress';
          this.emit('response.in_progress', { response: this.snapshot() });
        }
        return;
      case 'text_delta':
        if (event.turn_id !== this.lead || event.delta === '') return;
        this.appendText(event.delta);
        return;
      case 'attempt_reset':
        if (event.turn_id === this.lead) this.withdraw();
        return;
      case 'usage':
        if (event.turn_id === this.lead) this.addUsage(event);
        return;
      case 'input_required':
        if (event.turn_id !== this.lead) return;
        this.waiting.add(event.request_id);
        if (event.kind === 'approval') {
          this.addApproval(event.request_id, {
            type: 'mcp_approval_request',
            id: event.request_id,
            server_label: 'parley',
            name: event.tool ?? 'tool',
            arguments: JSON.stringify(event.arguments ?? {}),
          });
        } else if (event.kind === 'client_tool') {
          this.addApproval(event.request_id, {
            type: 'function_call',
            id: `fc_${event.request_id}`,
            call_id: event.call_id,
            name: event.tool ?? 'tool',
            arguments: JSON.stringify(event.arguments ?? {}),
            status: 'completed',
          });
        }
        return;
      case 'input_resolved':
        this.waiting.delete(event.request_id);
        this.approvals.delete(event.request_id);
        return;
      case 'done':
        if (!event.turn_ids.includes(turnId)) return;
        this.finish(event.final_message.content);
        return;
      case 'error':
        if (!event.turn_ids.includes(turnId)) return;
        this.closeMessage('incomplete');
        this.status = 'failed';
        this.error = { code: event.code, message: event.message };
        this.emit('response.failed', { response: this.snapshot() });
        return;
      case 'cancelled':
        if (!event.turn_ids.includes(turnId)) return;
        this.closeMessage('incomplete');
        this.status = 'cancelled';
        // Responses has no `cancelled` event: the stream ends with the final state.
        this.emit('response.incomplete', { response: this.snapshot() });
        return;
      default:
        return;
    }
  }

  snapshot(): ResponseObject {
    const { identity } = this;
    return {
      id: responseIdOf(identity.turnId),
      object: 'response',
      created_at: identity.createdAt,
      status: this.status,
      model: identity.model,
      output: [
        ...this.items.map((item) => structuredClone(item)),
        ...[...this.approvals.values()].map((item) => ({ ...item })),
      ],
      usage: this.usage ? { ...this.usage } : null,
      error: this.error,
      incomplete_details: null,
      instructions: identity.instructions,
      metadata: identity.metadata,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [],
      temperature: null,
      top_p: null,
      background: identity.background,
      conversation: { id: identity.sessionId },
      previous_response_id: identity.previousResponseId,
    };
  }

  private emit(type: string, body: Record<string, unknown>): void {
    this.events.push({ type, sequence_number: this.events.length, ...body });
  }

  private openMessage(): MessageItem {
    if (this.current) return this.current;
    const item: MessageItem = {
      type: 'message',
      id: `msg_${this.identity.turnId}_${this.items.length}`,
      status: 'in_progress',
      role: 'assistant',
      content: [],
    };
    this.items.push(item);
    this.current = item;
    const outputIndex = this.items.length - 1;
    this.emit('response.output_item.added', {
      output_index: outputIndex,
      item: structuredClone(item),
    });
    item.content.push({ type: 'output_text', text: '', annotations: [] });
    this.emit('response.content_part.added', {
      item_id: item.id,
      output_index: outputIndex,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    });
    return item;
  }

  private appendText(delta: string): void {
    const item = this.openMessage();
    const part = item.content[0] as OutputText;
    part.text += delta;
    this.emit('response.output_text.delta', {
      item_id: item.id,
      output_index: this.items.indexOf(item),
      content_index: 0,
      delta,
      logprobs: [],
    });
  }

  /** The attempt's text is withdrawn (a retried step): its item ends empty, `incomplete`. */
  private withdraw(): void {
    if (!this.current) return;
    const item = this.current;
    item.content = [];
    this.closeMessage('incomplete');
  }

  private closeMessage(status: 'completed' | 'incomplete'): void {
    const item = this.current;
    if (!item) return;
    this.current = null;
    const outputIndex = this.items.indexOf(item);
    const part = item.content[0];
    if (status === 'completed' && part) {
      this.emit('response.output_text.done', {
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        text: part.text,
        logprobs: [],
      });
      this.emit('response.content_part.done', {
        item_id: item.id,
        output_index: outputIndex,
        content_index: 0,
        part: { ...part },
      });
    }
    item.status = status;
    this.emit('response.output_item.done', {
      output_index: outputIndex,
      item: structuredClone(item),
    });
  }

  private finish(text: string): void {
    // The reply as committed wins over what streamed (a short reply may stream in one piece).
    const item = this.openMessage();
    const part = item.content[0] as OutputText;
    if (part.text !== text) {
      if (text.startsWith(part.text)) {
        this.appendText(text.slice(part.text.length));
      } else {
        part.text = text;
      }
    }
    this.closeMessage('completed');
    this.approvals.clear();
    this.waiting.clear();
    this.status = 'completed';
    this.emit('response.completed', { response: this.snapshot() });
  }

  private addApproval(requestId: string, item: ApprovalItem | FunctionCallItem): void {
    this.approvals.set(requestId, item);
    const outputIndex = this.items.length + this.approvals.size - 1;
    this.emit('response.output_item.added', { output_index: outputIndex, item: { ...item } });
    this.emit('response.output_item.done', { output_index: outputIndex, item: { ...item } });
  }

  private addUsage(event: Extract<ParleyEvent, { type: 'usage' }>): void {
    const usage = this.usage ?? {
      input_tokens: 0,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 0,
    };
    usage.input_tokens += event.input_tokens;
    usage.input_tokens_details.cached_tokens += event.cached_input_tokens;
    usage.output_tokens += event.output_tokens;
    usage.output_tokens_details.reasoning_tokens += event.reasoning_tokens;
    usage.total_tokens = usage.input_tokens + usage.output_tokens;
    this.usage = usage;
  }
}
