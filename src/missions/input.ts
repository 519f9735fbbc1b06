import { validateArguments } from '../tools/validate.js';

/**
 * Checks a dispatch's `input` against the mission's `input_schema` (Ajv, like tool
 * arguments). Returns what is wrong, naming the field and never its value, or null.
 */
export function checkMissionInput(
  schema: Record<string, unknown> | null,
  input: Record<string, unknown>,
): string | null {
  if (schema === null) return null;
  const problem = validateArguments({ inputSchema: schema }, input);
  return problem ? problem.message.replace(/\barguments?\b/g, 'input') : null;
}

/**
 * The prompt of an execution's first iteration: `{{key}}` placeholders are replaced by the
 * input's values; an input no placeholder mentions is appended as JSON, so the agent sees
 * every parameter it was dispatched with.
 */
export function renderMissionPrompt(prompt: string, input: Record<string, unknown>): string {
  let used = false;
  const rendered = prompt.replace(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g, (_, key: string) => {
    used = true;
    const value = Object.hasOwn(input, key) ? input[key] : '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
  if (used || Object.keys(input).length === 0) return rendered;
  return `${rendered}\n\nInput: ${JSON.stringify(input)}`;
}
