import { compileSchema } from '../tools/validate.js';
import { ConfigError } from './errors.js';
import type { AgentFile } from './schema.js';
import type { AgentStateConfig } from './types.js';

/**
 * Compiles an agent's `state` (docs/governance.md, "Sessions with state"): the schema is
 * compiled once here, and `initial` must satisfy it, else the definition is refused
 * naming the key (`where` is `agents.NAME.state`).
 */
export function compileAgentState(
  where: string,
  state: NonNullable<AgentFile['state']>,
): AgentStateConfig {
  let check: ReturnType<typeof compileSchema>;
  try {
    check = compileSchema(state.schema);
  } catch {
    throw new ConfigError(`${where}.schema: not a valid JSON Schema`);
  }
  const validate = (data: unknown): string | null => {
    if (check(data)) return null;
    const first = check.errors?.[0];
    if (!first) return 'the data does not satisfy the schema';
    const path = first.instancePath === '' ? 'data' : `data${first.instancePath}`;
    // Ajv's messages name the rule ("must be >= 1"), never the value.
    return `${path} ${first.message ?? 'is not valid'}`;
  };
  const invalid = validate(state.initial);
  if (invalid !== null) throw new ConfigError(`${where}.initial: ${invalid}`);
  const options: AgentStateConfig['options'] = {};
  for (const [value, effect] of Object.entries(state.options)) {
    options[value] = {
      set: effect.set,
      ...(effect.result === undefined ? {} : { result: effect.result }),
      complete: effect.complete,
      reply: effect.reply,
    };
  }
  return {
    schema: state.schema,
    validate,
    initial: state.initial,
    prompt: state.prompt,
    options,
  };
}
