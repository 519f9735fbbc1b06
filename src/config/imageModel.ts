import { generateImageTool, type ImageToolOptions } from '../tools/generateImage.js';
import { ConfigError } from './errors.js';
import type { AgentConfig, AgentToolConfig, ProviderConfig, ProviderKind } from './types.js';

/** Provider kinds that make images (the `generate_image` tool's `model`). */
export const imageProviderKinds: readonly ProviderKind[] = ['demo', 'openai', 'google', 'fal'];

export function isImageProvider(provider: ProviderConfig | undefined): boolean {
  return provider !== undefined && imageProviderKinds.includes(provider.kind);
}

/**
 * The image model an agent's `generate_image` entry names (null when it has none, or
 * denies it), checked: a configured provider of a kind that makes images (demo, openai,
 * google, fal). The error names the key.
 */
export function imageModelOf(
  agent: string,
  tools: Readonly<Record<string, AgentToolConfig>>,
  providers: Readonly<Record<string, ProviderConfig>>,
): ImageToolOptions['model'] | null {
  const entry = tools[generateImageTool];
  if (!entry || entry.policy === 'deny') return null;
  const { model } = entry.options as ImageToolOptions;
  const provider = providers[model.provider];
  const where = `agents.${agent}.tools.${generateImageTool}.model`;
  if (!provider || !Object.hasOwn(providers, model.provider)) {
    throw new ConfigError(`${where}: no provider named "${model.provider}" in providers`);
  }
  if (!isImageProvider(provider)) {
    throw new ConfigError(
      `${where}: the provider "${model.provider}" (kind ${provider.kind}) makes no images (demo, openai, google or fal)`,
    );
  }
  return model;
}

/** The provider an agent's image model uses, for the start-up check of its variables. */
export function imageModelUse(agent: AgentConfig): [string, string][] {
  const entry = agent.tools[generateImageTool];
  if (!entry || entry.policy === 'deny') return [];
  return [[`tools.${generateImageTool}.model`, (entry.options as ImageToolOptions).model.provider]];
}
