import { ConfigError } from './errors.js';
import type { AgentFile } from './schema.js';
import { compileAgentTools, escalationSteps, ToolConfigError } from './tools.js';
import { compileAgentState } from './agentState.js';
import { imageModelOf, imageModelUse } from './imageModel.js';
import {
  speechOnlyKinds,
  type AgentConfig,
  type ProviderConfig,
  type VoiceConfig,
} from './types.js';

/** What an agent definition is checked against: the deployment's providers and MCP servers. */
export interface AgentContext {
  providers: Readonly<Record<string, ProviderConfig>>;
  mcpServers: Readonly<Record<string, unknown>>;
  /** The tenant whose own definition this is; absent for the operator's file. */
  owner?: { tenant: string; mcpGrants: string[] };
  /** The voice catalog an agent's `voice` must name one of (Config.voices). */
  voices: readonly VoiceConfig[];
}

/**
 * Compiles one agent definition in the file's shape (a shipped one from the configuration,
 * or one edited through the API and kept in the database) into the runtime's AgentConfig.
 * Errors name the key as `agents.NAME.key`.
 */
export function compileAgent(name: string, agent: AgentFile, context: AgentContext): AgentConfig {
  const slash = agent.model.indexOf('/');
  const provider = agent.model.slice(0, slash);
  if (!Object.hasOwn(context.providers, provider)) {
    throw new ConfigError(`agents.${name}.model: no provider named "${provider}" in providers`);
  }
  if (context.providers[provider]?.kind === 'fal') {
    throw new ConfigError(
      `agents.${name}.model: the provider "${provider}" (kind fal) makes images only (tools.generate_image.model)`,
    );
  }
  let gate: AgentConfig['gate'] = null;
  if (agent.gate) {
    const gateSlash = agent.gate.model.indexOf('/');
    const gateProvider = agent.gate.model.slice(0, gateSlash);
    if (!Object.hasOwn(context.providers, gateProvider)) {
      throw new ConfigError(
        `agents.${name}.gate.model: no provider named "${gateProvider}" in providers`,
      );
    }
    gate = {
      model: { provider: gateProvider, modelId: agent.gate.model.slice(gateSlash + 1) },
      topic: agent.gate.topic,
      redirect: agent.gate.redirect,
      timeoutMs: agent.gate.timeout_ms,
    };
  }
  let fallbackModel: AgentConfig['fallbackModel'] = null;
  if (agent.fallback_model) {
    const fallbackSlash = agent.fallback_model.indexOf('/');
    const fallbackProvider = agent.fallback_model.slice(0, fallbackSlash);
    if (!Object.hasOwn(context.providers, fallbackProvider)) {
      throw new ConfigError(
        `agents.${name}.fallback_model: no provider named "${fallbackProvider}" in providers`,
      );
    }
    fallbackModel = {
      provider: fallbackProvider,
      modelId: agent.fallback_model.slice(fallbackSlash + 1),
    };
  }
  for (const [key, used] of [
    ['model', provider],
    ['gate.model', gate?.model.provider],
    ['fallback_model', fallbackModel?.provider],
  ] as const) {
    const kind = used === undefined ? undefined : context.providers[used]?.kind;
    if (kind !== undefined && speechOnlyKinds.includes(kind)) {
      throw new ConfigError(
        `agents.${name}.${key}: the provider "${used}" (kind ${kind}) only speaks, it has no language models`,
      );
    }
  }
  const voiceId = agent.voice ?? null;
  if (voiceId !== null && !context.voices.some((voice) => voice.id === voiceId)) {
    throw new ConfigError(`agents.${name}.voice: no voice "${voiceId}" in voices`);
  }
  let tools;
  try {
    tools = compileAgentTools(name, agent.tools, context.mcpServers);
  } catch (error) {
    if (error instanceof ToolConfigError) throw new ConfigError(error.message);
    throw error;
  }
  imageModelOf(name, tools, context.providers);
  return {
    name,
    namespace: agent.namespace,
    model: { provider, modelId: agent.model.slice(slash + 1) },
    instructions: agent.instructions,
    greeting: agent.greeting,
    triggerRoles: agent.trigger_roles,
    approverRoles: agent.approver_roles,
    approvalTimeoutMs: agent.approval_timeout_ms,
    escalate: escalationSteps(agent.escalate),
    remindBeforeMs: agent.remind_before_ms,
    questionTimeoutMs: agent.question_timeout_ms,
    owner: context.owner?.tenant ?? null,
    mcpGrants: context.owner?.mcpGrants ?? null,
    tools,
    skills: agent.skills,
    budgets: {
      maxIterations: agent.budgets.max_iterations,
      maxToolCalls: agent.budgets.max_tool_calls,
      onExhausted: agent.budgets.on_exhausted,
      extensionTimeoutMs: agent.budgets.extension_timeout_ms,
    },
    pendingInput: agent.pending_input,
    completionText: agent.completion_text,
    completionReplaces: agent.completion_replaces,
    temperature: agent.temperature,
    maxOutputTokens: agent.max_output_tokens,
    providerOptions: agent.provider_options,
    vision: agent.vision,
    visibility: agent.visibility,
    gate,
    fallbackModel,
    state: agent.state === null ? null : compileAgentState(`agents.${name}.state`, agent.state),
    voice: voiceId,
    icon: agent.icon ?? null,
  };
}

/**
 * A provider some agent (or its gate) uses must have its variables set: start-up stops
 * naming the variable, never a value. Providers no agent uses are not checked, so one
 * configuration file can serve deployments that hold different keys.
 */
export function checkAgentCredentials(
  agent: AgentConfig,
  providers: Readonly<Record<string, ProviderConfig>>,
  env: Record<string, string | undefined>,
): void {
  const uses = [
    ['model', agent.model.provider],
    ...(agent.gate ? [['gate.model', agent.gate.model.provider]] : []),
    ...imageModelUse(agent),
  ] as const;
  for (const [key, providerName] of uses) {
    const provider = providers[providerName] as ProviderConfig;
    const variables = [
      ...(provider.apiKeyEnv ? [provider.apiKeyEnv] : []),
      ...Object.values(provider.headersFromEnv),
    ];
    const missing = variables.find((variable) => !env[variable]);
    if (missing !== undefined) {
      throw new ConfigError(
        `agents.${agent.name}.${key}: the provider "${providerName}" needs the environment variable ${missing}, which is not set`,
      );
    }
  }
}
