import type { UIMessageChunk } from 'ai';
import type { ParleyEvent } from '../client/index.js';
import { encodeApprovalId } from './approvals.js';
import { replyMessageId } from './messages.js';

type Usage = { input_tokens: number; output_tokens: number; cost_usd: number };

/**
 * Turns the journal events of one burst into AI SDK `UIMessageChunk`s (a discriminated
 * union on `type`, as the journal's events are). Stateful per stream: it knows which
 * text part is open, which calls were rejected, and when the burst is over.
 *
 * - `turn`: the turn the stream answers; events of other bursts are skipped.
 * - `mode`: `new` opens the reply message (`start` with `replyMessageId(turn)`);
 *   `continue` adds to the message already shown (after an approval).
 */
export class ChunkMapper {
  /** The burst's lead turn, learnt from `turn_started` (or given, when continuing). */
  private lead: string | null;
  private started = false;
  private textId: string | null = null;
  private readonly rejected = new Set<string>();
  private readonly calls = new Set<string>();
  private readonly requestCalls = new Map<string, string>();
  private usage: Usage = { input_tokens: 0, output_tokens: 0, cost_usd: 0 };
  /** The burst ended (done, cancelled, error): the stream closes after these chunks. */
  finished = false;
  /** The burst waits for a person: the stream closes once the journal is read up to here. */
  waiting = false;

  constructor(
    private readonly turn: string,
    private readonly mode: 'new' | 'continue',
  ) {
    this.lead = mode === 'continue' ? turn : null;
  }

  map(event: ParleyEvent): UIMessageChunk[] {
    if (!this.belongs(event)) return [];
    const out: UIMessageChunk[] = [];
    if (!this.started) {
      this.started = true;
      out.push(
        this.mode === 'new'
          ? { type: 'start', messageId: replyMessageId(this.turn) }
          : { type: 'start' },
        { type: 'start-step' },
      );
    }
    const data = event as ParleyEvent & Record<string, unknown>;
    switch (event.type) {
      case 'turn_started':
        this.lead = event.turn_id;
        this.waiting = false;
        break;
      case 'text_delta':
        if (this.textId === null) {
          this.textId = `text_${event.sequence}`;
          out.push({ type: 'text-start', id: this.textId });
        }
        out.push({ type: 'text-delta', id: this.textId, delta: event.delta });
        break;
      case 'attempt_reset':
        // Streamed text cannot be taken back in a UI message stream: close the part and
        // mark it abandoned (isAbandonedPart); the next attempt streams a new part.
        if (this.textId !== null) {
          out.push({
            type: 'text-end',
            id: this.textId,
            providerMetadata: { parley: { abandoned: true } },
          });
          this.textId = null;
        }
        break;
      case 'tool_call':
        out.push(...this.endText());
        this.calls.add(event.call_id);
        out.push({
          type: 'tool-input-available',
          toolCallId: event.call_id,
          toolName: event.tool,
          input: event.arguments ?? {},
          dynamic: true,
        });
        break;
      case 'input_required': {
        out.push(...this.endText());
        const callId = event.call_id ?? `input_${event.request_id}`;
        this.requestCalls.set(event.request_id, callId);
        if (event.kind === 'client_tool') {
          // The app runs it (its `tool-input-available` is out: useChat's onToolCall) and
          // sends the output with addToolOutput: no approval to show.
          this.waiting = true;
          break;
        }
        if (!this.calls.has(callId)) {
          // A budget extension has no proposed call: show it as one, so it can be approved.
          this.calls.add(callId);
          out.push({
            type: 'tool-input-available',
            toolCallId: callId,
            toolName: event.tool ?? event.kind,
            input: event.prompt !== undefined ? { prompt: event.prompt } : (event.arguments ?? {}),
            dynamic: true,
          });
        }
        out.push({
          type: 'tool-approval-request',
          toolCallId: callId,
          approvalId: encodeApprovalId({
            requestId: event.request_id,
            expectedSequence: event.sequence,
            kind: event.kind,
            turnId: event.turn_id ?? this.lead ?? this.turn,
            argumentsDigest: event.arguments_digest,
          }),
        });
        this.waiting = true;
        break;
      }
      case 'input_resolved': {
        const callId = this.callOf(event.request_id);
        if (!event.approved && callId) {
          this.rejected.add(callId);
          // Expired requests (superseded, cancelled) get no tool result: deny them now.
          if (typeof data.expired === 'string')
            out.push({ type: 'tool-output-denied', toolCallId: callId });
        }
        break;
      }
      case 'tool_result':
        if (!this.calls.has(event.call_id)) break;
        if (this.rejected.has(event.call_id)) {
          out.push({ type: 'tool-output-denied', toolCallId: event.call_id });
        } else if (event.ok) {
          out.push({
            type: 'tool-output-available',
            toolCallId: event.call_id,
            output: event.result ?? null,
            dynamic: true,
          });
        } else {
          out.push({
            type: 'tool-output-error',
            toolCallId: event.call_id,
            errorText: describe(event.error),
            dynamic: true,
          });
        }
        out.push({ type: 'finish-step' }, { type: 'start-step' });
        break;
      case 'usage':
        this.usage = {
          input_tokens: this.usage.input_tokens + event.input_tokens,
          output_tokens: this.usage.output_tokens + event.output_tokens,
          cost_usd: this.usage.cost_usd + event.cost_usd,
        };
        out.push({ type: 'message-metadata', messageMetadata: { parley: { usage: this.usage } } });
        break;
      case 'done':
        out.push(...this.endText(), { type: 'finish-step' });
        out.push({
          type: 'finish',
          finishReason: 'stop',
          messageMetadata: {
            parley: {
              usage: this.usage,
              message_id: event.final_message.id,
              turn_ids: event.turn_ids,
            },
          },
        });
        this.finished = true;
        break;
      case 'cancelled':
        out.push(...this.endText(), { type: 'abort', reason: 'cancelled' });
        this.finished = true;
        break;
      case 'error':
        out.push(...this.endText(), {
          type: 'error',
          errorText: `${event.message} (${event.code})`,
        });
        this.finished = true;
        break;
      default:
        break;
    }
    return out;
  }

  /**
   * The lead of the burst this stream's turn was folded into, when `event` is the first
   * sign of it and nothing was shown yet: that burst's reply is `reply_<lead>`, and the
   * stream should show it whole rather than open a second message for the same reply.
   */
  foldedInto(event: ParleyEvent): string | null {
    if (this.mode !== 'new' || this.started || event.type !== 'turn_started') return null;
    if (event.turn_id === this.turn || !(event.turn_ids ?? []).includes(this.turn)) return null;
    return event.turn_id;
  }

  /** Whether the journal event is part of the burst this stream shows. */
  private belongs(event: ParleyEvent): boolean {
    if (event.type === 'turn_started') {
      return event.turn_id === this.turn || (event.turn_ids ?? []).includes(this.turn);
    }
    if (event.type === 'done' || event.type === 'cancelled' || event.type === 'error') {
      return (
        event.turn_ids.includes(this.turn) ||
        (this.lead !== null && event.turn_ids.includes(this.lead))
      );
    }
    if (event.type === 'message') return false;
    return this.lead !== null && event.turn_id === this.lead;
  }

  /**
   * A call shown before this stream began (continuing after an approval): its result and
   * its request's outcome belong to this stream.
   */
  knownCall(requestId: string, callId: string): void {
    this.requestCalls.set(requestId, callId);
    this.calls.add(callId);
  }

  private callOf(requestId: string): string | null {
    return this.requestCalls.get(requestId) ?? null;
  }

  private endText(): UIMessageChunk[] {
    if (this.textId === null) return [];
    const id = this.textId;
    this.textId = null;
    return [{ type: 'text-end', id }];
  }
}

function describe(error: unknown): string {
  if (typeof error === 'string') return error;
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : JSON.stringify(error);
}

/**
 * A replay (reconnectToStream) reads history before streaming it, so text that a later
 * `attempt_reset` abandoned is never shown: within each turn, the deltas since the last
 * tool call or usage record are dropped when a reset follows them.
 */
export function withoutAbandonedText(events: ParleyEvent[]): ParleyEvent[] {
  const dropped = new Set<number>();
  const open = new Map<string, number[]>();
  for (const [index, event] of events.entries()) {
    const turn = event.turn_id ?? '';
    if (event.type === 'text_delta') open.set(turn, [...(open.get(turn) ?? []), index]);
    else if (event.type === 'tool_call' || event.type === 'usage') open.delete(turn);
    else if (event.type === 'attempt_reset') {
      for (const at of open.get(turn) ?? []) dropped.add(at);
      open.delete(turn);
    }
  }
  return events.filter((_event, index) => !dropped.has(index));
}
