import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
} from '@ai-sdk/provider';
import { wrapLanguageModel } from 'ai';
import { classifyProviderError, ProviderFailure } from './failure.js';

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface CircuitSettings {
  /** Consecutive transient failures that open the circuit; 0: never opens. */
  failures: number;
  /** How long it stays open before one probe call may try the provider again. */
  openMs: number;
}

export interface CircuitChange {
  provider: string;
  state: CircuitState;
  /** Consecutive transient failures when it changed. */
  failures: number;
}

/**
 * One provider's circuit, in this process: `failures` consecutive transient failures
 * (429, 5xx, network, a stalled stream) open it; while open every call fails at once with
 * `provider_circuit_open` (retryable: the runtime fails over to the agent's fallback model
 * or waits through its retries); after `openMs` it is half-open and lets one probe call
 * through — its success closes the circuit, its failure opens it again. Permanent
 * refusals (401, 400) and the caller's own aborts say nothing about the provider's health
 * and count neither way. Every change of state is reported (`onChange`).
 */
export class Circuit {
  private consecutive = 0;
  private openedAt: number | null = null;
  private probing = false;

  constructor(
    readonly provider: string,
    private readonly settings: CircuitSettings,
    private readonly onChange: (change: CircuitChange) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  state(): CircuitState {
    if (this.openedAt === null) return 'closed';
    return this.now() - this.openedAt >= this.settings.openMs ? 'half_open' : 'open';
  }

  /** Whether a call may go to the provider now (half-open: one probe at a time). */
  admit(): boolean {
    const state = this.state();
    if (state === 'closed') return true;
    if (state === 'open' || this.probing) return false;
    this.probing = true;
    this.report('half_open');
    return true;
  }

  succeeded(): void {
    this.probing = false;
    const wasOpen = this.openedAt !== null;
    this.consecutive = 0;
    this.openedAt = null;
    if (wasOpen) this.report('closed');
  }

  failed(): void {
    const probe = this.probing;
    this.probing = false;
    this.consecutive += 1;
    if (this.settings.failures <= 0) return;
    if (probe || (this.openedAt === null && this.consecutive >= this.settings.failures)) {
      this.openedAt = this.now();
      this.report('open');
    }
  }

  /** A call that ended without a verdict (the caller aborted it): frees the probe slot. */
  abandoned(): void {
    this.probing = false;
  }

  private report(state: CircuitState): void {
    this.onChange({ provider: this.provider, state, failures: this.consecutive });
  }
}

/**
 * A model whose streaming calls go through its provider's circuit: refused at once while
 * it is open, and each call's outcome recorded — a stream that reached `finish` is a
 * success, a transient failure (before or during the stream) a failure.
 */
export function withCircuit(model: LanguageModelV3, circuit: Circuit): LanguageModelV3 {
  return wrapLanguageModel({
    model,
    middleware: {
      specificationVersion: 'v3',
      wrapStream: ({ doStream, params }) => streamThroughCircuit(doStream, params, circuit),
    },
  });
}

async function streamThroughCircuit(
  doStream: () => PromiseLike<LanguageModelV3StreamResult>,
  options: LanguageModelV3CallOptions,
  circuit: Circuit,
): Promise<LanguageModelV3StreamResult> {
  if (!circuit.admit()) {
    throw new ProviderFailure(true, null, { code: 'provider_circuit_open' });
  }
  let settled = false;
  const settle = (outcome: 'succeeded' | 'failed' | 'abandoned') => {
    if (settled) return;
    settled = true;
    circuit[outcome]();
  };
  const judge = (error: unknown) => {
    if (options.abortSignal?.aborted) settle('abandoned');
    else settle(classifyProviderError(error).isRetryable ? 'failed' : 'abandoned');
  };
  let result: LanguageModelV3StreamResult;
  try {
    result = await doStream();
  } catch (error) {
    judge(error);
    throw error;
  }
  const reader = result.stream.getReader();
  const watched = new ReadableStream<LanguageModelV3StreamPart>({
    async pull(controller) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        judge(error);
        controller.error(error);
        return;
      }
      if (next.done) {
        settle('abandoned');
        controller.close();
        return;
      }
      if (next.value.type === 'finish') settle('succeeded');
      else if (next.value.type === 'error') judge(next.value.error);
      controller.enqueue(next.value);
    },
    cancel(reason) {
      settle('abandoned');
      return reader.cancel(reason);
    },
  });
  return { ...result, stream: watched };
}
