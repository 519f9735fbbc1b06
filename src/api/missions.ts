import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { MissionConfig } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { clientKeyPattern } from '../ids.js';
import { dispatchOf } from '../missions/dispatch.js';
import { checkMissionInput } from '../missions/input.js';
import { createExecution } from '../store/createExecution.js';
import { toExecutionProjection } from '../store/getExecution.js';
import { agentsOf, missionsOf, type ApiDeps } from './deps.js';
import {
  execution as executionSchema,
  mission as missionSchema,
  priority,
} from '../protocol/missions.js';
import { route, routeOptions, typed } from './contract.js';
import { pathId, storableJson, text } from './validate.js';
import { requireMemberWorkspace } from './workspaces.js';

const inputObject = z
  .record(z.string(), z.unknown())
  .refine(storableJson, 'must not contain NUL characters or unpaired surrogates');

const dispatchBody = z
  .object({
    execution_id: z.string().regex(clientKeyPattern, 'must be 1-128 characters of A-Z a-z 0-9 _ -'),
    agent: z.string().min(1).max(128).optional(),
    input: inputObject
      .optional()
      .meta({ description: "checked against the mission's input_schema" }),
    threads: z
      .array(
        z
          .object({ agent: z.string().min(1).max(128).optional(), input: inputObject.optional() })
          .strict(),
      )
      .min(1)
      .max(32)
      .optional(),
    priority: priority.optional(),
    timeout_seconds: z.number().positive().max(31_536_000).optional(),
    workspace_id: text().min(1).max(128).optional().meta({
      description:
        'a workspace the caller is a member of: the execution and its sessions are in it',
    }),
  })
  .strict();

const listQuery = z.object({ namespace: z.string().max(64).optional() });

export const missionContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/missions',
    summary: "The tenant's missions (never their prompts)",
    querystring: listQuery,
    responses: { '200': z.object({ items: z.array(missionSchema) }) },
    errors: { '400': 'invalid_request' },
  }),
  dispatch: route({
    method: 'POST',
    url: '/api/v1/missions/:name/executions',
    summary: 'Dispatch an execution; 202 once durable; idempotent by execution_id',
    body: dispatchBody,
    responses: { '202': executionSchema },
    errors: {
      '400': 'invalid_request, invalid_input',
      '404':
        'mission_not_found, unknown_agent, workspace_not_found (also one the caller is not a member of)',
      '409': 'execution_conflict',
    },
  }),
};

/** What any principal of the tenant may know about a mission (never its prompts). */
export function describeMission(mission: MissionConfig) {
  return {
    name: mission.name,
    namespace: mission.namespace,
    agent: mission.agent,
    loop: mission.loopPrompt !== null,
    max_iterations: mission.maxIterations,
    loop_delay_seconds: mission.loopDelaySeconds,
    input_schema: mission.inputSchema,
    interrupt_to: mission.interruptTo,
    priority: mission.priority,
    timeout_seconds: mission.timeoutSeconds,
    approval_timeout_ms: mission.approvalTimeoutMs,
    on_timeout: mission.onTimeout,
  };
}

/**
 * The missions of the principal's tenant, and dispatching an execution — 202 once
 * it is durable (its session and its due timer), idempotent by `execution_id` like a turn.
 * An unknown mission and another tenant's are the same 404.
 */
export function missionRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const contracts = missionContracts;
  api.get(contracts.list.url, routeOptions(contracts.list), async (request) => {
    const query = request.query;
    const missions = missionsOf(deps)
      .list(request.principal.tenant)
      .filter((mission) => query.namespace === undefined || mission.namespace === query.namespace);
    return {
      items: missions.map((mission) => {
        const origin = deps.directory?.info('mission', request.principal.tenant, mission.name);
        return {
          ...describeMission(mission),
          is_customized: origin?.is_customized ?? false,
          content_hash: origin?.content_hash ?? null,
          shipped_content_hash: origin?.shipped_content_hash ?? null,
          shipped_changed: origin?.shipped_changed ?? false,
        };
      }),
    };
  });

  api.post(contracts.dispatch.url, routeOptions(contracts.dispatch), async (request, reply) => {
    const name = pathId(request.params.name, 'name');
    const body = request.body;
    const principal = request.principal;
    const mission = missionsOf(deps).get(principal.tenant, name);
    if (!mission) throw new ParleyError('mission_not_found', `no mission named "${name}"`);
    const agents = agentsOf(deps);
    const known = (agent: string, field: string) => {
      if (!agents.get(principal.tenant, agent)) {
        throw new ParleyError('unknown_agent', `${field}: no agent named "${agent}"`, { field });
      }
      return agent;
    };
    const agent = known(body.agent ?? mission.agent, 'agent');
    const input = body.input ?? {};
    const checked = (value: Record<string, unknown>, field: string) => {
      const problem = checkMissionInput(mission.inputSchema, value);
      if (problem) throw new ParleyError('invalid_input', `${field}: ${problem}`, { field });
      return value;
    };
    checked(input, 'input');
    const threads =
      body.threads?.map((thread, index) => ({
        agent: known(thread.agent ?? agent, `threads.${index}.agent`),
        input: checked(thread.input ?? input, `threads.${index}.input`),
      })) ?? null;
    const workspaceId = body.workspace_id ?? null;
    if (workspaceId !== null) {
      await requireMemberWorkspace(deps.db, principal, workspaceId, 'workspace_id');
    }
    const { execution } = await createExecution(deps.db, {
      ...dispatchOf(
        mission,
        {
          tenant: principal.tenant,
          executionId: body.execution_id,
          user: principal.user,
          agent,
          input,
          threads,
          priority: body.priority ?? null,
          timeoutSeconds: body.timeout_seconds ?? null,
          missionRevision: missionsOf(deps).revision?.(principal.tenant, name) ?? null,
        },
        (name) => agents.get(principal.tenant, name)?.visibility ?? 'tenant',
      ),
      workspaceId,
    });
    // A retry of a known dispatch answers like the first one did (202, same execution).
    return reply.status(202).send(toExecutionProjection(execution));
  });
}
