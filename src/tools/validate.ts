import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import { ToolError, type JsonSchema, type Tool } from './types.js';

/*
 * Arguments are checked against each tool's JSON Schema with Ajv, a full validator: MCP
 * servers bring arbitrary schemas (draft-07 or 2020-12). No coercion, no defaults filled
 * in: the tool gets exactly what the model sent, or the model gets an `invalid_arguments`
 * error it can correct. Unknown keywords are tolerated (`strict: false`) because foreign
 * schemas use vendor extensions.
 */
const options: Options = {
  allErrors: false,
  strict: false,
  strictNumbers: true,
  validateFormats: false,
};
const compiled = new WeakMap<object, ValidateFunction>();
// Loaded on the first validation, not at start-up: every process imports the tools, few
// validate at once, and start-up time matters (the embedded server restarts after a crash).
const load = createRequire(import.meta.url);
let validators: { draft7: Ajv; draft2020: Ajv } | undefined;

function ajvFor(schema: JsonSchema): Ajv {
  validators ??= {
    draft7: new (load('ajv') as typeof import('ajv')).Ajv(options),
    draft2020: new (load('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')).Ajv2020(options),
  };
  return String(schema.$schema ?? '').includes('2020-12')
    ? validators.draft2020
    : validators.draft7;
}

/** Compiles (once per schema object) a validator; throws if the schema itself is invalid. */
export function compileSchema(schema: JsonSchema): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajvFor(schema).compile(schema as object);
    compiled.set(schema, validate);
  }
  return validate;
}

/** Names a key in a message without echoing unbounded model output back. */
function label(key: string): string {
  return JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key);
}

function describe(error: ErrorObject): string {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  const where = path.length > 0 ? `argument ${label(path.join('.'))}` : 'arguments';
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required': {
      const missing = [...path, String(params.missingProperty)].join('.');
      return `missing required argument ${label(missing)}`;
    }
    case 'additionalProperties':
      return `unknown argument ${label([...path, String(params.additionalProperty)].join('.'))}`;
    case 'type': {
      const type = String(params.type);
      if (path.length === 0 && type === 'object') return 'arguments must be a JSON object';
      const article = /^[aeiou]/.test(type) ? 'an' : 'a';
      return `${where} must be ${article} ${type === 'number' ? 'finite number' : type}`;
    }
    case 'maxLength':
      return `${where} must be at most ${String(params.limit)} characters`;
    default:
      // Ajv's own messages name the rule ("must be >= 1"), never the value.
      return `${where} ${error.message ?? 'is not valid'}`;
  }
}

/**
 * Checks `args` against the tool's JSON Schema. Returns the first mismatch as a
 * ToolError('invalid_arguments') whose message names the argument (never its value), or
 * undefined when the arguments fit. A schema that does not compile fails every call.
 */
export function validateArguments(
  tool: Pick<Tool, 'inputSchema'>,
  args: unknown,
): ToolError | undefined {
  let validate: ValidateFunction;
  try {
    validate = compileSchema(tool.inputSchema);
  } catch {
    return new ToolError('tool_failed', 'the tool declares an argument schema that is not valid');
  }
  // A model's arguments are always an object; a schema that omits `type` must not let a
  // string or an array through to a tool written for an object.
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return new ToolError('invalid_arguments', 'arguments must be a JSON object');
  }
  if (validate(args)) return undefined;
  const first = validate.errors?.[0];
  return new ToolError('invalid_arguments', first ? describe(first) : 'arguments are not valid');
}
