import type { LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import { ParleyError } from '../errors.js';
import type { ClientTool } from '../store/types.js';

export type { ClientTool };

/** At most this many tools with one message, together at most this many bytes of JSON. */
export const clientToolLimits = { count: 32, bytes: 32_768 } as const;

const namePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The client's tools, checked: names a model accepts (letters, digits, `_`, `-`, at most
 * 64), none twice, none an agent's own tool (`taken`), object schemas, within the limits.
 * Anything else is `invalid_request` naming `field`, before anything is written.
 */
export function checkClientTools(
  tools: readonly { name: string; description?: string | undefined; parameters?: unknown }[],
  taken: (name: string) => boolean,
  field: string,
): ClientTool[] {
  const refuse = (message: string): never => {
    throw new ParleyError('invalid_request', `${field}: ${message}`, { field });
  };
  if (tools.length > clientToolLimits.count) {
    refuse(`at most ${clientToolLimits.count} tools`);
  }
  const seen = new Set<string>();
  const checked = tools.map((tool) => {
    if (!namePattern.test(tool.name)) {
      refuse(`"${tool.name.slice(0, 80)}" is not a tool name (letters, digits, _ and -, 1-64)`);
    }
    if (seen.has(tool.name)) refuse(`${tool.name} is declared twice`);
    if (taken(tool.name)) refuse(`the agent has its own tool named ${tool.name}`);
    seen.add(tool.name);
    const parameters = tool.parameters ?? { type: 'object', properties: {} };
    if (
      typeof parameters !== 'object' ||
      parameters === null ||
      Array.isArray(parameters) ||
      (parameters as { type?: unknown }).type !== 'object'
    ) {
      refuse(`${tool.name}: parameters must be a JSON schema of type "object"`);
    }
    return {
      name: tool.name,
      description: tool.description ?? '',
      parameters: parameters as Record<string, unknown>,
    };
  });
  if (Buffer.byteLength(JSON.stringify(checked)) > clientToolLimits.bytes) {
    refuse(`at most ${clientToolLimits.bytes} bytes of tool definitions`);
  }
  return checked;
}

/**
 * The client tools a burst offers: its turns' (the first declaration of a name wins),
 * less any name the agent's own tools now have (the agent's tool wins).
 */
export function burstClientTools(
  turns: readonly { client_tools?: ClientTool[] | null }[],
  own: ReadonlySet<string>,
): Map<string, ClientTool> {
  const tools = new Map<string, ClientTool>();
  for (const turn of turns) {
    for (const tool of turn.client_tools ?? []) {
      if (!own.has(tool.name) && !tools.has(tool.name)) tools.set(tool.name, tool);
    }
  }
  return tools;
}

/** A client tool as the model is offered it. */
export function offeredClientTool(tool: ClientTool): LanguageModelV3FunctionTool {
  return {
    type: 'function',
    name: tool.name,
    description: tool.description,
    inputSchema: tool.parameters,
  };
}
