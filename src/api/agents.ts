import type { FastifyInstance } from 'fastify';
import { ParleyError } from '../errors.js';
import { resolveAgentTools } from '../tools/registry.js';
import type { ApiDeps } from './deps.js';

/**
 * The agents this server runs and the tools each has (`parley tools list`): every tool
 * with its source (built-in, mcp:SERVER, skill), its policy, whether it is available now
 * (an MCP server may be down), and the MCP servers' state.
 */
export function agentRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/api/v1/agents', async () => ({
    agents: Object.values(deps.config.agents).map((agent) => ({
      name: agent.name,
      model: `${agent.model.provider}/${agent.model.modelId}`,
      skills: agent.skills,
    })),
  }));

  app.get<{ Params: { name: string } }>('/api/v1/agents/:name/tools', async (request) => {
    const agent = Object.hasOwn(deps.config.agents, request.params.name)
      ? deps.config.agents[request.params.name]
      : undefined;
    if (!agent) throw new ParleyError('unknown_agent', `no agent named "${request.params.name}"`);
    const tools = resolveAgentTools(agent, deps.tools ?? new Map()).map((tool) => ({
      name: tool.name,
      source: tool.source,
      policy: tool.policy,
      available: tool.tool !== null || tool.name === 'ask_user',
      description: tool.tool?.description ?? null,
      timeout_ms: tool.timeoutMs,
      idempotent: tool.idempotent,
    }));
    return { agent: agent.name, tools, mcp_servers: deps.mcpStatus?.() ?? [] };
  });
}
