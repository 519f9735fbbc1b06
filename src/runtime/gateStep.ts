import type { AgentConfig, GateConfig } from '../config/types.js';
import { newEvent, type NewEvent } from '../protocol/events.js';
import { foldInputs } from '../providers/foldedPrompt.js';
import { classifyTopic } from '../providers/gate.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import type { Usage } from '../store/usageRows.js';
import { structuredReply, type TurnTrace } from '../telemetry/tracing.js';
import type { RuntimeDeps } from './deps.js';
import { usageOf } from './usage.js';

const noTokens = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };

export interface GateOutcome {
  /** The turn may go on to the main model. */
  onTopic: boolean;
  /** The `gate` event to journal when it may not. */
  event: NewEvent | null;
  /** The gate call, billed to the turn. */
  usage: Usage | null;
}

/**
 * Whether a burst gets the scope gate (RUNTIME.md, "apply structured inputs first"): only a
 * fresh burst of messages. A pressed option, an approval answer or a budget extension is
 * applied before any gate and never gated, and neither is a burst resumed after one.
 */
export function needsGate(
  agent: AgentConfig,
  turns: QueuedTurn[],
  resumed: boolean,
): agent is AgentConfig & { gate: GateConfig } {
  return agent.gate !== null && !resumed && turns.every((turn) => turn.option === null);
}

/**
 * Runs the agent's scope gate on the folded burst: a cheap model classifies it against the
 * topic (providers/gate.ts). Fail-closed: an error, a timeout or an answer outside the
 * schema is off-topic, with the reason in the `gate` event.
 */
export async function runGate(
  deps: RuntimeDeps,
  agent: AgentConfig & { gate: GateConfig },
  lead: string,
  turns: QueuedTurn[],
  signal: AbortSignal,
  trace: TurnTrace,
): Promise<GateOutcome> {
  const { gate } = agent;
  const model = deps.resolveModel(gate.model.provider, gate.model.modelId);
  const input = foldInputs(turns.map((turn) => ({ author: turn.author, content: turn.content })));
  // Its span: what it classified (content capture only) and what it cost.
  const traced = trace.chat({
    provider: gate.model.provider,
    model: gate.model.modelId,
    prompt: [
      { role: 'system', content: gate.topic },
      { role: 'user', content: [{ type: 'text', text: input }] },
    ],
    purpose: 'gate',
  });
  const verdict = await classifyTopic(model, {
    topic: gate.topic,
    input,
    timeoutMs: gate.timeoutMs,
    signal,
  });
  const modelName = `${gate.model.provider}/${gate.model.modelId}`;
  const usage = verdict.usage ? usageOf(deps.config, modelName, verdict.usage, 'gate') : null;
  if (usage && verdict.failed) usage.outcome = 'failed';
  if (verdict.failed) traced.fail('gate_failed');
  else
    traced.end(structuredReply({ ...(verdict.usage ?? noTokens), costUsd: usage?.cost_usd ?? 0 }));
  return {
    onTopic: verdict.on_topic,
    event: verdict.on_topic
      ? null
      : newEvent('gate', lead, {
          on_topic: false,
          reason: verdict.reason,
          failed: verdict.failed,
        }),
    usage,
  };
}
