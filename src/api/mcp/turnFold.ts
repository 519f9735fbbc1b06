import type { InputRequiredEvent, ParleyEvent } from '../../protocol/events.js';

/**
 * A Parley turn seen as the result of an MCP tool call (docs/protocols.md, "MCP server"):
 * a fold over the session's journal from the turn's admission on, like the OpenAI
 * adapter's responseFold.ts but into what a tool result needs — where the turn stands,
 * its reply, the requests it waits on — and the steps a progress notification reports.
 */

/** Where a called turn stands, as `structuredContent.status` says it. */
export type CallStatus = 'in_progress' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** One step worth a progress notification: its text (a reply delta, or what happens). */
export interface ProgressStep {
  message: string;
}

export class TurnFold {
  private ended: 'completed' | 'failed' | 'cancelled' | null = null;
  /** The turn that leads the burst this turn runs in (its text is the reply). */
  private lead: string | null = null;
  private attempt = 0;
  private text = '';
  private error: { code: string; message: string } | null = null;
  /** The requests of the turn a person has yet to answer, oldest first. */
  readonly waiting = new Map<string, InputRequiredEvent>();

  constructor(private readonly turnId: string) {}

  get status(): CallStatus {
    if (this.ended) return this.ended;
    return this.waiting.size > 0 ? 'input_required' : 'in_progress';
  }

  get isEnded(): boolean {
    return this.ended !== null;
  }

  /** The reply as it stands: the final message once done, else the text streamed so far. */
  get reply(): string {
    return this.text;
  }

  get failure(): { code: string; message: string } | null {
    return this.error;
  }

  /** Applies one journal event; answers the progress step it makes, if any. */
  apply(event: ParleyEvent): ProgressStep | null {
    if (this.ended) return null;
    switch (event.type) {
      case 'turn_started':
        if (!event.turn_ids.includes(this.turnId)) return null;
        // Another attempt: the earlier one's text is withdrawn.
        if (event.attempt !== this.attempt) this.text = '';
        this.attempt = event.attempt;
        this.lead = event.turn_id;
        return { message: 'started' };
      case 'text_delta':
        if (event.turn_id !== this.lead || event.delta === '') return null;
        this.text += event.delta;
        return { message: event.delta };
      case 'attempt_reset':
        if (event.turn_id !== this.lead) return null;
        this.text = '';
        return { message: 'retrying' };
      case 'tool_call':
        if (event.turn_id !== this.lead) return null;
        return { message: `calling ${event.tool}` };
      case 'input_required':
        if (event.turn_id !== this.lead) return null;
        this.waiting.set(event.request_id, event);
        return { message: `waiting for a person (${event.kind})` };
      case 'input_resolved':
        if (!this.waiting.delete(event.request_id)) return null;
        return { message: event.approved ? 'answered' : 'refused' };
      case 'done':
        if (!event.turn_ids.includes(this.turnId)) return null;
        // The reply as committed wins over what streamed.
        this.text = event.final_message.content;
        return this.end('completed');
      case 'error':
        if (!event.turn_ids.includes(this.turnId)) return null;
        this.error = { code: event.code, message: event.message };
        return this.end('failed');
      case 'cancelled':
        if (!event.turn_ids.includes(this.turnId)) return null;
        return this.end('cancelled');
      default:
        return null;
    }
  }

  private end(status: 'completed' | 'failed' | 'cancelled'): ProgressStep {
    this.ended = status;
    this.waiting.clear();
    return { message: status };
  }
}
