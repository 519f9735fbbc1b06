import { createHash, randomUUID } from 'node:crypto';
import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3Prompt,
  type LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import { approvalToolName } from './approvalDecision.js';
import { decisionToolName } from './evaluator.js';
import { unfoldInputs } from './foldedPrompt.js';
import { gateToolName } from './gate.js';

/**
 * The `demo` provider (CONFIG.md): deterministic and offline, implemented on the AI SDK's
 * LanguageModelV3 interface exactly like a real provider, so the runtime cannot tell the
 * difference. It echoes every word of every input, one word per text delta.
 *
 * Commands inside an input:
 * - `/fail transient N`: the next N calls for this prompt fail retryably (like HTTP 429).
 * - `/fail permanent`: every call fails non-retryably (like HTTP 401).
 * - `/options a|b|c`: the reply offers those options (the built-in `offer_options` call).
 * - `/tool NAME {json}` (one per line): proposes calls of those tools; once the prompt
 *   ends with their results, it replies quoting each result.
 * - `/panel {json}` (one per line): proposes a `show_panel` call of that document (or of
 *   that whole call, when the JSON has a `document`).
 * - `/image PROMPT` (one per line): proposes a `generate_image` call with that prompt.
 * - `/stall`: like a provider that sends two chunks and then nothing: the first two words
 *   of its reply, then silence until the call is aborted (timeouts, the watchdog).
 * - `/keepalive`: like a provider that sends two chunks and then only keep-alives: the
 *   first two words, then an empty text delta every 50 ms until the call is aborted. Each
 *   keep-alive resets the provider's idle timeout; only the progress watchdog ends it.
 *
 * As a scope gate (a call forcing the `classify_topic` tool): on-topic unless the input
 * contains `/offtopic`. As a loop mission's evaluator (a call forcing `record_decision`):
 * the last `/decide ...` of its prompt decides — `continue:N` continues until iteration N
 * and completes at N, `continue` always continues, `blocked`, `complete`, and `garbage`
 * answers text outside the schema; none completes. As an agent deciding another agent's
 * request (a call forcing `record_approval`): the last `/approval approve|reject|garbage
 * [REASON]` of its instructions — never of the request, which fetched content may shape —
 * decides; none rejects; a `/fail` line in its instructions fails those calls as above.
 * With `/answer TEXT` in its instructions it replies TEXT to every turn (an agent that
 * answers other agents' requests); with `/sign TEXT` there, every reply that has text
 * ends with a line `(signed: TEXT)`. With images in its last user message: a model whose
 * id contains `vision` replies with each image's media type and size, any other says it cannot see
 * images.
 */
export function createDemoModel(options: { modelId: string; delayMs: number }): LanguageModelV3 {
  // Failures already served per prompt, so that `/fail transient N` fails exactly N calls.
  const failuresServed = new Map<string, number>();

  return {
    specificationVersion: 'v3',
    provider: 'demo',
    modelId: options.modelId,
    supportedUrls: {},
    async doGenerate() {
      throw new Error('the demo model only streams');
    },
    async doStream(call: LanguageModelV3CallOptions) {
      const lastUser = [...call.prompt].reverse().find((message) => message.role === 'user');
      const text = lastUser ? textOf(lastUser.content) : '';
      const inputs = unfoldInputs(text);
      // An approval judge's instructions may fail its decision calls too (its request is data).
      const judging = isForced(call, approvalToolName);
      failIfAsked(
        [...inputs.map((input) => input.content), ...(judging ? [systemText(call.prompt)] : [])],
        text,
        failuresServed,
      );
      const gate = isGateCall(call);
      const evaluation = isForced(call, decisionToolName)
        ? evaluatorAnswer(text)
        : isForced(call, approvalToolName)
          ? approvalAnswer(systemText(call.prompt))
          : null;
      const last = call.prompt[call.prompt.length - 1];
      const results = last?.role === 'tool' ? quoteResults(last.content) : null;
      const proposed = gate
        ? [{ tool: gateToolName, input: gateVerdict(text) }]
        : evaluation !== null
          ? evaluation.call
          : results === null
            ? proposedCalls(inputs.map((input) => input.content))
            : [];
      const images = lastUser && !gate ? imagesOf(lastUser.content) : [];
      const scripted = /^\s*\/answer[ \t]+(.+)$/m.exec(systemText(call.prompt))?.[1];
      const reply =
        evaluation?.text ??
        results ??
        (scripted !== undefined && !gate
          ? scripted.trim()
          : images.length > 0
            ? describeImages(options.modelId, images)
            : proposed.length > 0
              ? ''
              : inputs.length === 1
                ? `You said: ${words(inputs[0]?.content ?? '').join(' ')}`
                : inputs
                    .map(
                      (input, index) =>
                        `[${index + 1}] You said: ${words(input.content).join(' ')}`,
                    )
                    .join('\n'));
      // `/sign TEXT` in its instructions: every reply with text ends with `(signed: TEXT)`,
      // so a test can tell which instructions each model step saw.
      const signature = /^\s*\/sign[ \t]+(.+)$/m.exec(systemText(call.prompt))?.[1];
      const signed =
        signature !== undefined && reply !== '' && !gate && evaluation === null
          ? `${reply}\n(signed: ${signature.trim()})`
          : reply;
      const replyWords = signed === '' ? [] : signed.split(/(?<=\s)/);
      const stall = !gate && inputs.some((input) => /^\s*\/stall\b/m.test(input.content));
      const keepAlive = !gate && inputs.some((input) => /^\s*\/keepalive\b/m.test(input.content));
      const inputTokens = promptWords(call.prompt);
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        async start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'response-metadata', modelId: options.modelId });
          controller.enqueue({ type: 'text-start', id: 'text-0' });
          try {
            for (const [index, word] of replyWords.entries()) {
              if (stall && index === 2) await silence(call.abortSignal);
              if (keepAlive && index === 2) await keepAlives(controller, call.abortSignal);
              if (index > 0 && options.delayMs > 0) await sleep(options.delayMs, call.abortSignal);
              controller.enqueue({ type: 'text-delta', id: 'text-0', delta: word });
            }
            if (stall) await silence(call.abortSignal);
            if (keepAlive) await keepAlives(controller, call.abortSignal);
          } catch (error) {
            controller.error(error);
            return;
          }
          controller.enqueue({ type: 'text-end', id: 'text-0' });
          for (const [index, proposal] of proposed.entries()) {
            controller.enqueue({
              type: 'tool-call',
              toolCallId: `call_${randomUUID().slice(0, 8)}_${index}`,
              toolName: proposal.tool,
              input: proposal.input,
            });
          }
          const offered = offeredOptions(inputs.map((input) => input.content));
          if (offered) {
            controller.enqueue({
              type: 'tool-call',
              toolCallId: 'call-options',
              toolName: 'offer_options',
              input: JSON.stringify({ options: offered }),
            });
          }
          controller.enqueue({
            type: 'finish',
            finishReason: { unified: 'stop', raw: 'stop' },
            usage: {
              inputTokens: {
                total: inputTokens,
                noCache: inputTokens,
                cacheRead: 0,
                cacheWrite: 0,
              },
              outputTokens: { total: words(reply).length, text: words(reply).length, reasoning: 0 },
            },
          });
          controller.close();
        },
      });
      return { stream };
    },
  };
}

function failIfAsked(contents: string[], prompt: string, served: Map<string, number>): void {
  for (const content of contents) {
    if (/^\s*\/fail permanent\b/m.test(content)) {
      throw new APICallError({
        message: 'demo: the request was refused (simulated permanent failure)',
        url: 'demo://echo',
        requestBodyValues: {},
        statusCode: 401,
        isRetryable: false,
      });
    }
    const transient = /^\s*\/fail transient (\d+)\b/m.exec(content);
    if (transient) {
      const key = createHash('sha256').update(prompt).digest('hex');
      const count = served.get(key) ?? 0;
      if (count < Number(transient[1])) {
        served.set(key, count + 1);
        throw new APICallError({
          message: 'demo: rate limited (simulated transient failure)',
          url: 'demo://echo',
          requestBodyValues: {},
          statusCode: 429,
          isRetryable: true,
        });
      }
    }
  }
}

function isGateCall(call: LanguageModelV3CallOptions): boolean {
  return isForced(call, gateToolName);
}

function isForced(call: LanguageModelV3CallOptions, tool: string): boolean {
  return call.toolChoice?.type === 'tool' && call.toolChoice.toolName === tool;
}

/**
 * The evaluator's answer: the last `/decide` of the prompt (the loop prompt, or a person's
 * note after it) against the prompt's `Iteration: N`.
 */
function evaluatorAnswer(text: string): {
  call: { tool: string; input: string }[];
  text: string;
} {
  const commands = [...text.matchAll(/\/decide[ \t]+([a-z]+)(?::(\d+))?/g)];
  const command = commands[commands.length - 1];
  const iteration = Number(/^Iteration: (\d+)/m.exec(text)?.[1] ?? 1);
  const decide = (decision: string, reason: string) => ({
    call: [{ tool: decisionToolName, input: JSON.stringify({ decision, reason }) }],
    text: '',
  });
  if (!command) return decide('complete', 'no /decide: the mission is complete');
  const [, verb, until] = command;
  if (verb === 'garbage') return { call: [], text: 'I would rather not say.' };
  if (verb === 'blocked') return decide('blocked', 'the loop prompt says /decide blocked');
  if (verb === 'continue' && (until === undefined || iteration < Number(until))) {
    return decide('continue', `iteration ${iteration}: more to do`);
  }
  return decide('complete', `iteration ${iteration}: done`);
}

/**
 * The approval judge's answer: the last `/approval` line of the agent's instructions. The
 * request itself (the user message) is never read, so its content cannot steer the demo.
 */
function approvalAnswer(system: string): { call: { tool: string; input: string }[]; text: string } {
  const commands = [...system.matchAll(/^\s*\/approval[ \t]+([a-z]+)[ \t]*(.*)$/gm)];
  const command = commands[commands.length - 1];
  const decide = (approved: boolean, reason: string) => ({
    call: [{ tool: approvalToolName, input: JSON.stringify({ approved, reason }) }],
    text: '',
  });
  if (!command) return decide(false, 'no /approval in my instructions: rejected');
  const [, verb, rest] = command;
  if (verb === 'garbage') return { call: [], text: 'I would rather not say.' };
  const reason = (rest ?? '').trim();
  if (verb === 'approve') return decide(true, reason || 'approved by /approval approve');
  return decide(false, reason || 'rejected by /approval reject');
}

function systemText(prompt: LanguageModelV3Prompt): string {
  return prompt
    .filter((message) => message.role === 'system')
    .map((message) => (typeof message.content === 'string' ? message.content : ''))
    .join('\n');
}

function gateVerdict(text: string): string {
  const off = /\/offtopic\b/.test(text);
  return JSON.stringify({
    on_topic: !off,
    reason: off ? 'the message asks for /offtopic' : 'the message is within the topic',
  });
}

function imagesOf(content: LanguageModelV3Prompt[number]['content']): {
  mediaType: string;
  bytes: number;
}[] {
  if (typeof content === 'string') return [];
  return content.flatMap((part) =>
    part.type === 'file' && part.mediaType.startsWith('image/')
      ? [{ mediaType: part.mediaType, bytes: byteSize(part.data) }]
      : [],
  );
}

function byteSize(data: unknown): number {
  if (data instanceof Uint8Array) return data.byteLength;
  if (typeof data === 'string') return Buffer.from(data, 'base64').byteLength;
  return 0;
}

function describeImages(modelId: string, images: { mediaType: string; bytes: number }[]): string {
  if (!modelId.includes('vision')) return 'I cannot see images.';
  return images
    .map((image) => `I see an image (${image.mediaType}, ${image.bytes} bytes).`)
    .join(' ');
}

function proposedCalls(contents: string[]): { tool: string; input: string }[] {
  const calls: { tool: string; input: string }[] = [];
  for (const content of contents) {
    for (const match of content.matchAll(/^\s*\/tool\s+([A-Za-z0-9_-]+)\s*(.*)$/gm)) {
      const raw = (match[2] ?? '').trim() || '{}';
      calls.push({ tool: match[1] as string, input: raw });
    }
    for (const match of content.matchAll(/^\s*\/panel\s+(.*)$/gm)) {
      calls.push({ tool: 'show_panel', input: panelCall((match[1] ?? '').trim()) });
    }
    for (const match of content.matchAll(/^\s*\/image[ \t]+(.+)$/gm)) {
      calls.push({
        tool: 'generate_image',
        input: JSON.stringify({ prompt: (match[1] ?? '').trim() }),
      });
    }
  }
  return calls;
}

/**
 * `/panel {json}`: a `show_panel` call — the JSON is the whole call when it has a
 * `document`, else the document itself (titled "Panel"). Not JSON: passed on as it is, so
 * the call fails like a model's malformed one.
 */
function panelCall(raw: string): string {
  try {
    const parsed = JSON.parse(raw) as unknown;
    const whole = typeof parsed === 'object' && parsed !== null && 'document' in parsed;
    return JSON.stringify(whole ? parsed : { title: 'Panel', document: parsed });
  } catch {
    return raw;
  }
}

function quoteResults(content: unknown): string {
  const parts = Array.isArray(content)
    ? (content as { toolName?: string; output?: { type: string; value: unknown } }[])
    : [];
  return parts
    .map((part) =>
      part.output?.type === 'json'
        ? `Tool ${part.toolName} returned: ${JSON.stringify(part.output.value)}`
        : `Tool ${part.toolName} failed: ${String(part.output?.value)}`,
    )
    .join('\n');
}

function offeredOptions(contents: string[]): string[] | null {
  for (const content of contents) {
    const match = /^\s*\/options\s+(.+)$/m.exec(content);
    if (match) {
      const choices = (match[1] as string)
        .split('|')
        .map((choice) => choice.trim())
        .filter((choice) => choice.length > 0);
      if (choices.length > 0) return choices;
    }
  }
  return null;
}

function textOf(content: LanguageModelV3Prompt[number]['content']): string {
  if (typeof content === 'string') return content;
  return content
    .map((part) => ('text' in part && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

function words(text: string): string[] {
  return text.split(/\s+/).filter((word) => word.length > 0);
}

function promptWords(prompt: LanguageModelV3Prompt): number {
  return prompt.reduce((sum, message) => sum + words(textOf(message.content)).length, 0);
}

/** Never resolves; rejects when the call is aborted (`/stall`). */
function silence(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}

/** Sends an empty text delta every 50 ms; never resolves, rejects when the call is aborted. */
function keepAlives(
  controller: ReadableStreamDefaultController<LanguageModelV3StreamPart>,
  signal: AbortSignal | undefined,
): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setInterval(() => {
      try {
        controller.enqueue({ type: 'text-delta', id: 'text-0', delta: '' });
      } catch (error) {
        // The reader cancelled the stream: nothing reads the keep-alives any more.
        clearInterval(timer);
        reject(error instanceof Error ? error : new Error('the stream was cancelled'));
      }
    }, 50);
    signal?.addEventListener(
      'abort',
      () => {
        clearInterval(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
