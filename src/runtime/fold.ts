import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { AgentConfig } from '../config/types.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import type { AttemptContext } from '../store/readHistory.js';
import type { BurstCall, BurstState, Lease } from '../store/types.js';
import { basePrompt } from './basePrompt.js';
import type { RuntimeDeps } from './deps.js';

/** How a prompt is (re)built: whole, or for a model step's retries (modelCall.ts). */
export interface PromptOptions {
  /** Half the history: the one retry after a `context_length` refusal. */
  tighter?: boolean;
  /** No images: the one retry after a call that carried images failed for good. */
  withoutImages?: boolean;
}

/** The model's view of the burst as it stands now, and how many images it carries. */
export type Prompter = (
  options: PromptOptions,
) => Promise<{ prompt: LanguageModelV3Prompt; images: number }>;

/**
 * Folds the burst into what the model sees (RUNTIME.md, "fold the burst"): the base prompt
 * (basePrompt.ts: instructions, history, the burst's turns as one labelled message), built
 * once per variant and reused by every step, then what the burst did since (each call
 * reads `burst` as it is then: the steps and tool results so far).
 */
export function foldBurst(
  deps: RuntimeDeps,
  lease: Lease,
  agent: AgentConfig,
  burst: BurstState,
  context: Pick<AttemptContext, 'history' | 'preferences'>,
  base: QueuedTurn[],
): Prompter {
  const built = new Map<string, ReturnType<typeof basePrompt>>();
  return async (options) => {
    const key = `${options.tighter === true}:${options.withoutImages === true}`;
    let start = built.get(key);
    if (!start) built.set(key, (start = basePrompt(deps, lease, agent, context, base, options)));
    const { prompt, imagesSent } = await start;
    return { prompt: continuePrompt(prompt, burst), images: imagesSent };
  };
}

/**
 * The model's view of a burst in progress: the base prompt, then per step the model's
 * text and calls and the calls' results, and inputs folded in later as user messages.
 */
export function continuePrompt(
  base: LanguageModelV3Prompt,
  burst: BurstState,
): LanguageModelV3Prompt {
  const prompt = [...base];
  for (const step of burst.steps) {
    if (step.kind === 'input') {
      // A budget extension is between the runtime and a person: the model never sees it.
      if (step.text) prompt.push({ role: 'user', content: [{ type: 'text', text: step.text }] });
      continue;
    }
    prompt.push({
      role: 'assistant',
      content: [
        ...(step.text ? [{ type: 'text' as const, text: step.text }] : []),
        ...step.calls.map((call) => ({
          type: 'tool-call' as const,
          toolCallId: call.call_id,
          toolName: call.tool,
          input: call.arguments,
        })),
      ],
    });
    if (step.calls.length > 0) {
      prompt.push({
        role: 'tool',
        content: step.calls.map((call) => ({
          type: 'tool-result' as const,
          toolCallId: call.call_id,
          toolName: call.tool,
          output:
            call.status === 'done'
              ? { type: 'json' as const, value: (call.result ?? null) as never }
              : { type: 'error-text' as const, value: resultText(call) },
        })),
      });
    }
  }
  return prompt;
}

/** What the model is told for a call that did not return a result. */
export function resultText(call: BurstCall): string {
  if (call.error) return call.error.message;
  return `the call of ${call.tool} did not run`;
}
