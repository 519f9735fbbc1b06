/**
 * The conversation's view model: what the timeline holds (see model.ts for how events
 * build it). Glossary: a *segment* is the text of one model step as it streams; it is
 * *sealed* when the step ends in a tool call or a usage record (the runtime keeps that
 * text across attempts).
 */
import type { InputKind, PanelComponent } from 'parley/client';

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

export interface OptionOffer {
  request_id: string;
  choices: string[];
}

/** How an input request ended: answered (by `actor`), expired, or timed out. */
export interface InputResolution {
  approved: boolean;
  actor: string | null;
  expired?: string | undefined;
  timedOut?: boolean | undefined;
}

export type Item =
  | {
      kind: 'message';
      key: string;
      role: 'user' | 'assistant' | 'system';
      author: string;
      content: string;
      turnId: string | null;
      option?: { request_id: string; value: string } | undefined;
      /** The images it carried (attachment ids), as the journal or the transcript names them. */
      attachments?: string[] | undefined;
    }
  | {
      kind: 'text';
      key: string;
      turnId: string;
      author: string;
      text: string;
      sealed: boolean;
      final: boolean;
      options?: OptionOffer | undefined;
    }
  | {
      kind: 'tool';
      key: string;
      turnId: string;
      callId: string;
      tool: string;
      arguments: unknown;
      result?: { ok: boolean; value: unknown } | undefined;
    }
  | {
      kind: 'input';
      key: string;
      turnId: string;
      requestId: string;
      inputKind: InputKind;
      callId?: string | undefined;
      tool?: string | undefined;
      arguments?: unknown;
      prompt?: string | undefined;
      expectedSequence: number;
      argumentsDigest?: string | undefined;
      deadlineAt?: string | undefined;
      /** Whom its escalation chain added to its audience so far. */
      escalatedTo?: string[] | undefined;
      /** Its deadline's reminder went out. */
      reminded?: boolean | undefined;
      provider?: string | undefined;
      url?: string | undefined;
      resolved?: InputResolution | undefined;
    }
  | {
      /** The progress watchdog stopped a step: `retry` (tried again) or `end`. */
      kind: 'stall';
      key: string;
      turnId: string;
      what: 'model_stream' | 'tool' | 'no_progress';
      action: 'retry' | 'end';
      tool?: string | undefined;
    }
  | {
      /** The session's domain state changed (`state_changed`): by whom, and if it completed. */
      kind: 'state';
      key: string;
      by: 'tool' | 'option' | 'admin' | 'user';
      completed: boolean;
    }
  | {
      kind: 'outcome';
      key: string;
      turnIds: string[];
      outcome: 'cancelled' | 'error';
      code?: string | undefined;
      message?: string | undefined;
      actor?: string | null | undefined;
    };

export interface ConversationState {
  /** Highest sequence applied. */
  cursor: number;
  items: Item[];
  /** Usage of each provider call, by the turn it belongs to. */
  usage: Record<string, Usage>;
  /** Turns admitted and not yet answered, cancelled or failed. */
  openTurns: string[];
  /** The lead turn of the burst a worker is on (or waiting for a person), if any. */
  activeTurn: string | null;
  /** Option offers already chosen (request_id → value). */
  chosen: Record<string, string>;
  /** Whether the burst waits for a person. */
  waiting: boolean;
  /** Sequence of the newest `panel` event: the stored panels changed since it was 0. */
  panelsChangedAt: number;
  /** Ephemeral panels the journal showed (stored nowhere else), by when they were shown. */
  ephemeralPanels: EphemeralPanel[];
}

/** A panel that lives only in the stream (`scope: ephemeral`). */
export interface EphemeralPanel {
  id: string;
  title: string;
  document: PanelComponent;
  sequence: number;
}

export const emptyConversation: ConversationState = {
  cursor: 0,
  items: [],
  usage: {},
  openTurns: [],
  activeTurn: null,
  chosen: {},
  waiting: false,
  panelsChangedAt: 0,
  ephemeralPanels: [],
};
