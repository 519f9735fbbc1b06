import type { AgentConfig, AgentStateConfig } from '../config/types.js';
import { newEffectId } from '../ids.js';
import type { QueuedTurn } from '../store/collectTurns.js';
import type { Queryable } from '../store/db.js';
import { readSessionData } from '../store/readSessionData.js';
import type { StateEffect } from '../store/types.js';
import { mergePatch } from '../tools/state/mergePatch.js';

/** What a pressed option with an effect does: the state effect and the fixed reply. */
export type OptionOutcome =
  { kind: 'apply'; effect: StateEffect; reply: string } | { kind: 'invalid'; message: string };

/**
 * The option effect a fresh burst answers with (docs/governance.md, "Sessions with
 * state"): the first turn of the burst that pressed an option the agent's
 * `state.options` names. Its merge patch applies to the committed data (or `initial`),
 * validated against the schema; the runtime then replies with the fixed text, without a
 * model call. Deterministic: a burst run again after a crash reads the same committed
 * data (nothing was written) and reaches the same outcome. Null: no such option pressed.
 */
export async function optionEffect(
  db: Queryable,
  tenant: string,
  sessionId: string,
  agent: AgentConfig,
  turns: readonly QueuedTurn[],
  resumed: boolean,
): Promise<OptionOutcome | null> {
  const state: AgentStateConfig | null = agent.state;
  if (resumed || state === null) return null;
  const pressed = turns.find(
    (turn) => turn.option !== null && Object.hasOwn(state.options, turn.option.value),
  );
  if (!pressed?.option) return null;
  const effect = state.options[pressed.option.value] as AgentStateConfig['options'][string];
  const current = (await readSessionData(db, tenant, sessionId)) ?? state.initial;
  const data = (effect.set === null ? current : mergePatch(current, effect.set)) as Record<
    string,
    unknown
  >;
  const invalid = state.validate(data);
  if (invalid !== null) {
    return {
      kind: 'invalid',
      message: `the option "${pressed.option.value}" would make the state invalid: ${invalid}`,
    };
  }
  return {
    kind: 'apply',
    effect: {
      kind: 'state',
      effect_id: newEffectId(),
      data,
      ...(Object.hasOwn(effect, 'result') ? { result: effect.result ?? null } : {}),
      complete: effect.complete,
    },
    reply: effect.reply,
  };
}
