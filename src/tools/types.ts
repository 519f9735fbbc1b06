/**
 * The shape of a tool the runtime can offer a model (docs/design/approvals.md). A tool is
 * described by a small JSON Schema subset — what `validateArguments` understands — and
 * executed with an abort signal it should honour where it can.
 */

/** One property of a tool's arguments: the JSON Schema subset the validator checks. */
export interface PropertySchema {
  type: 'string' | 'number';
  description?: string;
  maxLength?: number;
}

/** A tool's arguments: always a closed JSON object. */
export interface ObjectSchema {
  type: 'object';
  properties: Record<string, PropertySchema>;
  required: string[];
  additionalProperties: false;
}

export interface ToolContext {
  signal: AbortSignal;
}

export interface Tool {
  name: string;
  description: string;
  inputSchema: ObjectSchema;
  execute(args: unknown, context: ToolContext): Promise<unknown>;
}

/** Stable codes a tool failure is reported with; match on these, never on message text. */
export type ToolErrorCode =
  'invalid_arguments' | 'invalid_expression' | 'timeout' | 'aborted' | 'tool_failed';

/** A tool failure meant to be shown (to the model, to people): no stack, no secrets. */
export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ToolError';
  }

  toBody(): { code: ToolErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}
