import { ToolError, type Tool } from './types.js';

/** Names a key in a message without echoing unbounded model output back. */
function label(key: string): string {
  return JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key);
}

/**
 * Checks `args` against the tool's schema subset: a plain object, required keys present,
 * no unknown keys, property types string/number (finite), string maxLength. Returns the
 * first mismatch as a ToolError('invalid_arguments'), or undefined when the arguments fit.
 */
export function validateArguments(tool: Pick<Tool, 'inputSchema'>, args: unknown) {
  const schema = tool.inputSchema;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return new ToolError('invalid_arguments', 'arguments must be a JSON object');
  }
  const record = args as Record<string, unknown>;
  for (const key of schema.required) {
    if (!Object.hasOwn(record, key)) {
      return new ToolError('invalid_arguments', `missing required argument ${label(key)}`);
    }
  }
  for (const [key, value] of Object.entries(record)) {
    const property = Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
    if (property === undefined) {
      return new ToolError('invalid_arguments', `unknown argument ${label(key)}`);
    }
    if (property.type === 'string') {
      if (typeof value !== 'string') {
        return new ToolError('invalid_arguments', `argument ${label(key)} must be a string`);
      }
      if (property.maxLength !== undefined && value.length > property.maxLength) {
        return new ToolError(
          'invalid_arguments',
          `argument ${label(key)} must be at most ${property.maxLength} characters`,
        );
      }
    } else if (typeof value !== 'number' || !Number.isFinite(value)) {
      return new ToolError('invalid_arguments', `argument ${label(key)} must be a finite number`);
    }
  }
  return undefined;
}
