import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
} from '@ai-sdk/provider';
import { ProviderFailure } from './failure.js';

export interface StreamDeadlines {
  /** From sending the request to its first output part; 0: no limit. */
  firstTokenTimeoutMs: number;
  /** Between two parts once output has begun; 0: no limit. */
  idleTimeoutMs: number;
}

/** Parts a stream sends before the model produces anything: they do not count as output. */
const preamble = new Set<LanguageModelV3StreamPart['type']>([
  'stream-start',
  'response-metadata',
  'raw',
]);

/**
 * A model whose streaming calls end at a deadline instead of hanging: a call that has
 * produced no output `firstTokenTimeoutMs` after it was sent, or whose stream then stays
 * silent for `idleTimeoutMs` between two parts, is aborted — its request is aborted
 * through the signal handed to the provider client (the HTTP request and its socket are
 * closed), and the stream fails with a retryable `provider_timeout` ProviderFailure that
 * the runtime retries like any transient failure. Without this a provider that stalls
 * mid-stream holds its session `running` (the heartbeat keeps the lease) until the HTTP
 * client's own body timeout, minutes later, per attempt.
 *
 * The caller's own abort (a cancel, a lost lease) still aborts the request as before and
 * surfaces as the caller's reason, never as a timeout.
 */
export function withStreamDeadlines(
  model: LanguageModelV3,
  deadlines: StreamDeadlines,
): LanguageModelV3 {
  if (deadlines.firstTokenTimeoutMs <= 0 && deadlines.idleTimeoutMs <= 0) return model;
  return {
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    get supportedUrls() {
      return model.supportedUrls;
    },
    doGenerate: (options) => model.doGenerate(options),
    doStream: (options) => streamWithDeadlines(model, options, deadlines),
  };
}

async function streamWithDeadlines(
  model: LanguageModelV3,
  options: LanguageModelV3CallOptions,
  deadlines: StreamDeadlines,
): Promise<LanguageModelV3StreamResult> {
  const expired = new AbortController();
  const signal = options.abortSignal
    ? AbortSignal.any([options.abortSignal, expired.signal])
    : expired.signal;
  let timer: NodeJS.Timeout | undefined;
  let onExpiry: (failure: ProviderFailure) => void = () => {};
  const arm = (ms: number, what: string) => {
    clearTimeout(timer);
    if (ms <= 0) return;
    timer = setTimeout(() => {
      const failure = new ProviderFailure(true, null, { code: 'provider_timeout' });
      failure.message = `${failure.message} (${what} ${ms} ms)`;
      expired.abort(failure);
      onExpiry(failure);
    }, ms);
  };
  arm(deadlines.firstTokenTimeoutMs, 'no output within');

  let result: LanguageModelV3StreamResult;
  try {
    result = await model.doStream({ ...options, abortSignal: signal });
  } catch (error) {
    clearTimeout(timer);
    throw expired.signal.aborted ? expired.signal.reason : error;
  }
  const reader = result.stream.getReader();
  let producing = false;
  const stream = new ReadableStream<LanguageModelV3StreamPart>({
    start(output) {
      // Also end the stream we hand out, whether or not the provider's stream reacts to
      // the abort: a client that ignores its signal must not hold the caller.
      onExpiry = (failure) => {
        void reader.cancel(failure).catch(() => {});
        try {
          output.error(failure);
        } catch {
          // Already closed or errored.
        }
      };
      if (expired.signal.aborted) onExpiry(expired.signal.reason as ProviderFailure);
    },
    async pull(output) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        clearTimeout(timer);
        output.error(expired.signal.aborted ? expired.signal.reason : error);
        return;
      }
      if (expired.signal.aborted) return;
      if (next.done) {
        clearTimeout(timer);
        output.close();
        return;
      }
      if (producing || !preamble.has(next.value.type)) {
        producing = true;
        arm(deadlines.idleTimeoutMs, 'silent for');
      }
      output.enqueue(next.value);
    },
    cancel(reason) {
      clearTimeout(timer);
      return reader.cancel(reason);
    },
  });
  return { ...result, stream };
}
