import type { LanguageModelV3Prompt } from '@ai-sdk/provider';

/**
 * What the runtime tells telemetry, in its own words: a turn's run, its model calls, its
 * tool calls. The OpenTelemetry implementation (otel.ts, loaded only when
 * `telemetry.otlp_endpoint` is set) turns them into GenAI spans; `noTelemetry` does
 * nothing at all, so a deployment without an endpoint does no telemetry work on a turn's
 * path. Nothing here is global: each process (each test) holds its own.
 *
 * Glossary: a *turn run* is one call of the drain loop's `answerBurst` that got as far as
 * starting an attempt; a turn resumed after a crash, an approval or a pivot runs again,
 * and every run of one turn shares a trace (traceId.ts).
 */
export interface Telemetry {
  /** A turn's admission by an API process (a retry of it is another admission). */
  admission(turn: { tenant: string; turnId: string }): AdmissionTrace;
  /** A turn run; its span starts at `begin` (a run that never starts leaves no span). */
  turn(run: { tenant: string; sessionId: string; agent: string }): TurnTrace;
  /**
   * A structured call made outside a turn run and billed to `turnId` (a loop iteration's
   * evaluation, a model's approval decision): a `chat` span in that turn's trace.
   */
  structuredCall(call: {
    tenant: string;
    sessionId: string;
    turnId: string;
    agent: string;
    provider: string;
    model: string;
    purpose: 'evaluation' | 'approval';
  }): ChatTrace;
  /** Exports what is buffered now. */
  flush(): Promise<void>;
  /** Exports what is buffered and stops (the process's stop path). */
  shutdown(): Promise<void>;
}

export interface TurnTrace {
  /** The attempt started: `turnId` is the burst's lead turn, `attempt` the journal's. */
  begin(attempt: { turnId: string; turnIds: string[]; attempt: number }): void;
  /** The turn ended with an `error` event of this code (the run itself went fine). */
  failed(code: string): void;
  /** One model call (each retry is its own); `purpose` names a call that is not a step's. */
  chat(call: {
    provider: string;
    model: string;
    prompt: LanguageModelV3Prompt;
    purpose?: 'gate';
  }): ChatTrace;
  /** One tool call run by this worker. */
  tool(call: { tool: string; callId: string; arguments: unknown }): ToolTrace;
  /** How the run ended: its outcome's kind, or the error type of what was thrown. */
  end(outcome: { kind: string; errorType?: string }): void;
}

export interface ChatReply {
  text: string;
  reasoning: string;
  calls: { call_id: string; tool: string; arguments: unknown }[];
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  finishReason: string;
  responseModel: string | null;
  responseId: string | null;
  costUsd: number;
}

/** What a forced structured call (the gate, an evaluation) reports: its usage only. */
export function structuredReply(usage: {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  costUsd: number;
}): ChatReply {
  return {
    text: '',
    reasoning: '',
    calls: [],
    ...usage,
    finishReason: 'tool-calls',
    responseModel: null,
    responseId: null,
  };
}

export interface ChatTrace {
  end(reply: ChatReply): void;
  /** The call failed (`errorType`: the provider failure's code) or was broken off. */
  fail(errorType: string): void;
}

export interface ToolTrace {
  end(
    outcome:
      { ok: true; result: unknown } | { ok: false; error: { code: string; message: string } },
  ): void;
}

export interface AdmissionTrace {
  end(admitted: { sessionId: string; state: string }): void;
  /** Refused: the error's code (`turn_conflict`, `unknown_agent`...). */
  fail(errorType: string): void;
}

const noAdmission: AdmissionTrace = { end: () => {}, fail: () => {} };
const noChat: ChatTrace = { end: () => {}, fail: () => {} };
const noTool: ToolTrace = { end: () => {} };
const noTurn: TurnTrace = {
  begin: () => {},
  failed: () => {},
  chat: () => noChat,
  tool: () => noTool,
  end: () => {},
};

/** Telemetry off: every call returns at once, nothing is allocated per turn. */
export const noTelemetry: Telemetry = {
  admission: () => noAdmission,
  turn: () => noTurn,
  structuredCall: () => noChat,
  flush: async () => {},
  shutdown: async () => {},
};
