import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { isPictureUrl, maxPictureUrlChars, pictureUrlRule } from '../media/pictureUrl.js';
import type { DefinitionInfo } from '../agents/directory.js';
import type { AgentConfig } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { listModels } from '../store/listModels.js';
import { readUserProfile, saveUserProfile } from '../store/users.js';
import { resolveAgentTools } from '../tools/registry.js';
import { agentsOf, type ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { agentInfo, me } from '../protocol/rest.js';
import { route, routeOptions, typed } from './contract.js';
import { pathId, text } from './validate.js';

/**
 * What a client may know about an agent to pick one and to explain its cards: never its
 * instructions (they can hold a product's private prompt) nor its model's credentials.
 */
function describeAgent(
  agent: AgentConfig,
  isDefault: boolean,
  mayAnswer: boolean,
  origin: DefinitionInfo | null,
  acceptsImages: boolean,
  defaultVoice: string,
) {
  return {
    name: agent.name,
    namespace: agent.namespace,
    icon: agent.icon,
    voice: agent.voice ?? defaultVoice,
    default: isDefault,
    model: `${agent.model.provider}/${agent.model.modelId}`,
    greeting: agent.greeting,
    skills: agent.skills,
    tools: Object.entries(agent.tools).map(([name, tool]) => ({ name, policy: tool.policy })),
    approver_roles: agent.approverRoles,
    may_answer: mayAnswer,
    accepts_images: acceptsImages,
    // Shipped, or this tenant's own (customized or created).
    is_customized: origin?.is_customized ?? false,
    content_hash: origin?.content_hash ?? null,
    revision: origin?.revision ?? null,
    shipped_content_hash: origin?.shipped_content_hash ?? null,
    shipped_changed: origin?.shipped_changed ?? false,
  };
}

/**
 * Whether an image sent to this agent reaches its model, by the rule prompt assembly
 * applies: never under `vision: never`; to a model the catalog says sees images; and,
 * under `vision: always`, also to a model the catalog has no vision figure for (the
 * operator vouches for it). A model known not to see images never gets them.
 */
function acceptsImages(agent: AgentConfig, catalogVision: boolean | null): boolean {
  if (agent.vision === 'never') return false;
  return catalogVision === true || (catalogVision === null && agent.vision === 'always');
}

const listQuery = z.object({ namespace: z.string().max(64).optional() });

const profileBody = z
  .object({
    display_name: text().trim().min(1).max(80).nullable().optional(),
    avatar_url: text()
      .max(maxPictureUrlChars)
      .refine(isPictureUrl, pictureUrlRule)
      .nullable()
      .optional(),
  })
  .strict()
  .refine((body) => body.display_name !== undefined || body.avatar_url !== undefined, {
    message: 'give display_name or avatar_url',
  });

export const agentContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/agents',
    summary: 'The agents a session can be created with (never their instructions)',
    querystring: listQuery,
    responses: { '200': z.object({ items: z.array(agentInfo) }) },
    errors: { '401': 'unauthorized' },
  }),
  tools: route({
    method: 'GET',
    url: '/api/v1/agents/:name/tools',
    summary:
      "An agent's tools with source (built-in, mcp:SERVER, skill), policy and availability, and the state of the MCP servers they come from",
    responses: {
      '200': z.object({
        agent: z.string(),
        tools: z.array(
          z.object({
            name: z.string(),
            source: z.string(),
            policy: z.enum(['allow', 'approve', 'deny']),
            available: z.boolean(),
            description: z.string().nullable(),
            timeout_ms: z.number().int(),
            idempotent: z.boolean(),
          }),
        ),
        mcp_servers: z.array(
          z.object({
            name: z.string(),
            transport: z.enum(['stdio', 'http']),
            state: z.string(),
            tools: z.number().int(),
            error: z.string().nullable(),
            restarts: z.number().int(),
          }),
        ),
      }),
    },
    errors: { '404': 'unknown_agent' },
  }),
  me: route({
    method: 'GET',
    url: '/api/v1/me',
    summary: "The caller's principal; 401 when the API key is missing or wrong",
    responses: { '200': me },
    errors: { '401': 'unauthorized' },
  }),
  profile: route({
    method: 'PATCH',
    url: '/api/v1/me',
    summary: "Change the caller's display name or avatar (null clears one)",
    body: profileBody,
    responses: { '200': me },
    errors: { '400': 'invalid_request' },
  }),
};

/**
 * Extensions for clients (docs/PROTOCOL.md, "Extensions"): the agents a session can be
 * created with; every tool an agent has, with its source, policy and whether it is
 * available now (`parley tools list`); and who the caller is (to tell "you" from others
 * in a room without decoding anything client-side).
 */
export function agentRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  api.get(agentContracts.list.url, routeOptions(agentContracts.list), async (request) => {
    const principal = request.principal;
    const query = request.query;
    const agents = agentsOf(deps);
    const fallback = agents.defaultName(principal.tenant);
    const vision = new Map(
      (await listModels(deps.db)).map((model) => [
        `${model.provider}/${model.model_id}`,
        model.vision,
      ]),
    );
    return {
      items: agents
        .list(principal.tenant)
        .filter((agent) => query.namespace === undefined || agent.namespace === query.namespace)
        .map((agent) =>
          describeAgent(
            agent,
            agent.name === fallback,
            agent.approverRoles === null ||
              agent.approverRoles.some((role) => hasRole(principal, role)),
            deps.directory?.info('agent', principal.tenant, agent.name) ?? null,
            acceptsImages(
              agent,
              vision.get(`${agent.model.provider}/${agent.model.modelId}`) ?? null,
            ),
            deps.config.speech.defaultVoice,
          ),
        ),
    };
  });

  api.get(agentContracts.tools.url, routeOptions(agentContracts.tools), async (request) => {
    const name = pathId(request.params.name, 'name');
    const agent = agentsOf(deps).get(request.principal.tenant, name);
    if (!agent) throw new ParleyError('unknown_agent', `no agent named "${name}"`);
    const tools = resolveAgentTools(agent, deps.tools ?? new Map()).map((tool) => ({
      name: tool.name,
      source: tool.source,
      policy: tool.policy,
      available:
        (tool.tool !== null && (tool.tool.available?.() ?? true)) || tool.name === 'ask_user',
      description: tool.tool?.description ?? null,
      timeout_ms: tool.timeoutMs,
      idempotent: tool.idempotent,
    }));
    // Only the servers this agent's tools come from: others are none of the caller's business.
    const sources = new Set(tools.map((tool) => tool.source));
    const servers = (deps.mcpStatus?.() ?? []).filter((server) =>
      sources.has(`mcp:${server.name}`),
    );
    return { agent: agent.name, tools, mcp_servers: servers };
  });

  api.get(agentContracts.me.url, routeOptions(agentContracts.me), async (request) => {
    const { tenant, user, roles, operator } = request.principal;
    const profile = await readUserProfile(deps.db, tenant, user);
    return { tenant, user, roles, operator, mode: deps.config.auth.mode, ...profile };
  });

  api.patch(agentContracts.profile.url, routeOptions(agentContracts.profile), async (request) => {
    const { tenant, user, roles, operator } = request.principal;
    const profile = await saveUserProfile(deps.db, tenant, user, request.body);
    return { tenant, user, roles, operator, mode: deps.config.auth.mode, ...profile };
  });
}
