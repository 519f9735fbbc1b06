import type {
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultOutput,
} from '@ai-sdk/provider';

/**
 * Prompt assembly, a pure function: the agent's instructions, then as much
 * history as fits the model's context window, then the folded burst.
 *
 * - History is a list of turns, oldest first, in a provider-neutral shape (the
 *   transcript's), so a conversation answered by one provider continues on another:
 *   nothing provider-specific (reasoning signatures, provider metadata) is carried, and
 *   tool call ids are normalised to what every provider accepts.
 * - Whole turns are dropped, oldest first, until the rest fits: a tool call is never
 *   separated from its result, because both belong to one turn.
 * - A tool call without a result gets a synthetic one saying what happened to it
 *   (cancelled, rejected, superseded, interrupted): an orphaned call makes some providers
 *   (Anthropic) refuse the whole thread, forever.
 * - Images go to the model only when it has vision and the agent's `vision` allows it
 *   (`auto`: the turn that carries them and the next one; `always`; `never`); otherwise a
 *   short text note says an image was attached.
 * - `tighter` halves the history budget: the one retry after a `context_length` refusal.
 *
 * Token counts are estimates (about 4 characters a token, a fixed cost per image and per
 * message) with a safety margin; the provider remains the judge, hence `tighter`.
 */
export interface PromptAttachment {
  attachmentId: string;
  mediaType: string;
  bytes: number;
  /** The image's bytes; null when the caller did not load them (then only a note is sent). */
  data: Uint8Array | null;
}

export type CallOutcome = 'cancelled' | 'rejected' | 'superseded' | 'interrupted';

export type HistoryEntry =
  | { kind: 'user'; text: string; attachments?: PromptAttachment[] }
  | { kind: 'assistant'; text: string }
  | { kind: 'tool_call'; callId: string; tool: string; arguments: unknown; outcome?: CallOutcome }
  | {
      kind: 'tool_result';
      callId: string;
      tool: string;
      ok: boolean;
      result?: unknown;
      error?: string;
    };

/** One turn of the transcript: what the person said, the model's steps and tool results. */
export interface HistoryTurn {
  entries: HistoryEntry[];
}

export interface PromptRequest {
  instructions: string;
  /** Oldest first. */
  history: HistoryTurn[];
  /** The folded burst (providers/foldedPrompt.ts) and the images it carries. */
  burst: { text: string; attachments: PromptAttachment[] };
  /** From the catalog; null where nobody knows. */
  model: { contextWindow: number | null; maxOutputTokens: number | null; vision: boolean | null };
  agent: { vision: 'auto' | 'always' | 'never'; maxOutputTokens: number | null };
  /** The retry after a `context_length` refusal: half the history budget. */
  tighter?: boolean;
}

export interface BuiltPrompt {
  prompt: LanguageModelV3Prompt;
  estimatedTokens: number;
  /** Tokens the prompt may use: the window less the output reserve and a margin. */
  budgetTokens: number;
  keptTurns: number;
  droppedTurns: number;
  imagesSent: number;
}

/** The window assumed for a model the catalog has no figure for. */
export const fallbackContextWindow = 16_384;
const defaultOutputReserve = 4_096;
const imageTokens = 1_000;
const messageTokens = 4;

export function buildModelPrompt(request: PromptRequest): BuiltPrompt {
  const window = request.model.contextWindow ?? fallbackContextWindow;
  const reserve = Math.min(
    request.agent.maxOutputTokens ??
      Math.min(request.model.maxOutputTokens ?? defaultOutputReserve, defaultOutputReserve),
    Math.floor(window / 4),
  );
  const fullBudget = Math.floor((window - reserve) * 0.9);
  const budget = request.tighter ? Math.floor(fullBudget / 2) : fullBudget;
  const vision = visionPolicy(request);

  const system: LanguageModelV3Message = { role: 'system', content: request.instructions };
  const burst = userMessage(request.burst.text, request.burst.attachments, vision.current);
  let used = estimate([system]) + estimate([burst.message]);
  let images = burst.images;

  const kept: LanguageModelV3Message[][] = [];
  const turns = request.history;
  for (let index = turns.length - 1; index >= 0; index--) {
    const showImages = index === turns.length - 1 ? vision.previous : vision.older;
    const rendered = renderTurn(turns[index] as HistoryTurn, showImages);
    const cost = estimate(rendered.messages);
    if (used + cost > budget) break;
    used += cost;
    images += rendered.images;
    kept.unshift(rendered.messages);
  }
  return {
    prompt: [system, ...kept.flat(), burst.message],
    estimatedTokens: used,
    budgetTokens: budget,
    keptTurns: kept.length,
    droppedTurns: turns.length - kept.length,
    imagesSent: images,
  };
}

/** Which turns' images the model sees: the burst, the turn before it, older ones. */
function visionPolicy(request: PromptRequest): {
  current: boolean;
  previous: boolean;
  older: boolean;
} {
  // An operator who says `always` vouches for a model the catalog knows nothing about;
  // `auto` sends images only to a model known to see them.
  const canSee =
    request.model.vision === true ||
    (request.model.vision === null && request.agent.vision === 'always');
  if (!canSee || request.agent.vision === 'never')
    return { current: false, previous: false, older: false };
  if (request.agent.vision === 'always') return { current: true, previous: true, older: true };
  return { current: true, previous: true, older: false };
}

function userMessage(
  text: string,
  attachments: PromptAttachment[],
  showImages: boolean,
): { message: LanguageModelV3Message; images: number } {
  const notes: string[] = [];
  const files: { type: 'file'; mediaType: string; data: Uint8Array }[] = [];
  for (const attachment of attachments) {
    if (showImages && attachment.data) {
      files.push({ type: 'file', mediaType: attachment.mediaType, data: attachment.data });
    } else {
      notes.push(
        `[An image was attached (${attachment.mediaType}, ${attachment.bytes} bytes); it is not shown to you.]`,
      );
    }
  }
  const fullText = [text, ...notes].filter((part) => part.length > 0).join('\n');
  return {
    message: {
      role: 'user',
      content: [...(fullText ? [{ type: 'text' as const, text: fullText }] : []), ...files],
    },
    images: files.length,
  };
}

interface Step {
  text: string;
  calls: Extract<HistoryEntry, { kind: 'tool_call' }>[];
}

function renderTurn(
  turn: HistoryTurn,
  showImages: boolean,
): { messages: LanguageModelV3Message[]; images: number } {
  const results = new Map<string, Extract<HistoryEntry, { kind: 'tool_result' }>>();
  for (const entry of turn.entries) {
    if (entry.kind === 'tool_result') results.set(entry.callId, entry);
  }
  const messages: LanguageModelV3Message[] = [];
  let images = 0;
  let step: Step | null = null;
  const finishStep = () => {
    if (step) messages.push(...renderStep(step, results));
    step = null;
  };
  for (const entry of turn.entries) {
    if (entry.kind === 'user') {
      finishStep();
      const user = userMessage(entry.text, entry.attachments ?? [], showImages);
      images += user.images;
      if (user.message.content.length > 0) messages.push(user.message);
    } else if (entry.kind === 'assistant') {
      // Text after calls is the model's next step, answering their results.
      if (step && step.calls.length > 0) finishStep();
      step ??= { text: '', calls: [] };
      step.text = step.text ? `${step.text}\n\n${entry.text}` : entry.text;
    } else if (entry.kind === 'tool_call') {
      step ??= { text: '', calls: [] };
      step.calls.push(entry);
    }
  }
  finishStep();
  return { messages, images };
}

function renderStep(
  step: Step,
  results: Map<string, Extract<HistoryEntry, { kind: 'tool_result' }>>,
): LanguageModelV3Message[] {
  const messages: LanguageModelV3Message[] = [];
  const content = [
    ...(step.text.trim() ? [{ type: 'text' as const, text: step.text }] : []),
    ...step.calls.map((call) => ({
      type: 'tool-call' as const,
      toolCallId: portableCallId(call.callId),
      toolName: call.tool,
      input: call.arguments ?? {},
    })),
  ];
  if (content.length === 0) return messages;
  messages.push({ role: 'assistant', content });
  if (step.calls.length > 0) {
    messages.push({
      role: 'tool',
      content: step.calls.map((call) => ({
        type: 'tool-result' as const,
        toolCallId: portableCallId(call.callId),
        toolName: call.tool,
        output: resultOutput(call, results.get(call.callId)),
      })),
    });
  }
  return messages;
}

function resultOutput(
  call: Extract<HistoryEntry, { kind: 'tool_call' }>,
  result: Extract<HistoryEntry, { kind: 'tool_result' }> | undefined,
): LanguageModelV3ToolResultOutput {
  if (result?.ok) return { type: 'json', value: (result.result ?? null) as never };
  if (result)
    return { type: 'error-text', value: result.error ?? `the call of ${call.tool} failed` };
  return { type: 'error-text', value: orphanText(call.tool, call.outcome ?? 'interrupted') };
}

/** What the model reads for a call that never produced a result. */
export function orphanText(tool: string, outcome: CallOutcome): string {
  switch (outcome) {
    case 'cancelled':
      return `The call of ${tool} was cancelled; nothing ran.`;
    case 'rejected':
      return `The call of ${tool} was rejected; nothing ran.`;
    case 'superseded':
      return `The call of ${tool} was superseded by a newer message; nothing ran.`;
    case 'interrupted':
      return `The call of ${tool} was interrupted; its result is unknown.`;
  }
}

/**
 * Tool call ids as every provider accepts them (Anthropic: `^[a-zA-Z0-9_-]+$`, OpenAI:
 * at most 64 characters). The same id maps to the same result, so calls and results
 * still pair up after the rewrite.
 */
export function portableCallId(callId: string): string {
  const cleaned = callId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
  return cleaned.length > 0 ? cleaned : 'call';
}

/** A rough token count: ~4 characters a token, a fixed cost per image and per message. */
export function estimate(messages: LanguageModelV3Message[]): number {
  let tokens = 0;
  for (const message of messages) {
    tokens += messageTokens;
    if (typeof message.content === 'string') {
      tokens += Math.ceil(message.content.length / 4);
      continue;
    }
    for (const part of message.content) {
      if (part.type === 'text' || part.type === 'reasoning')
        tokens += Math.ceil(part.text.length / 4);
      else if (part.type === 'file') tokens += imageTokens;
      else if (part.type === 'tool-call') {
        tokens += Math.ceil((part.toolName.length + JSON.stringify(part.input ?? null).length) / 4);
      } else if (part.type === 'tool-result') {
        tokens += Math.ceil(JSON.stringify(part.output).length / 4);
      }
    }
  }
  return tokens;
}
