import type { FastifyInstance } from 'fastify';
import { namespaceOf, type Directory } from '../agents/directory.js';
import { ConfigError } from '../config/errors.js';
import { OperatorOnlyKeyError } from '../config/tenancy.js';
import { ParleyError } from '../errors.js';
import type { DefinitionKind } from '../store/definitions.js';
import { deleteDefinition } from '../store/deleteDefinition.js';
import { putDefinition } from '../store/putDefinition.js';
import { z } from 'zod';
import { definitionOrigin } from '../protocol/missions.js';
import { timestamp } from '../protocol/rest.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { nameOf, notFound } from './definitionNames.js';
import { definitionRevisionRoutes, revisionContracts } from './definitionRevisions.js';
import { storableJson } from './validate.js';

/** A definition as an admin sees it: where it comes from, and the definition itself. */
const definitionView = z
  .object({
    name: z.string(),
    namespace: z.string(),
    ...definitionOrigin,
    updated_at: timestamp,
    updated_by: z.string().nullable(),
    refused: z.string().nullable().meta({
      description:
        "why this tenant's stored definition is not used (it no longer passes the operator's checks); null when it is",
    }),
    definition: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({ description: "the configuration file's shape, defaults applied" }),
  })
  .meta({ id: 'Definition' });

const invalidDefinition =
  'invalid_definition (names the key; a number above its tenant ceiling names the ceiling), or invalid_request';
const notAdminOrOperatorKey =
  'forbidden (not an admin), or operator_only_key: a key only the operator sets (`key`: its path in the definition)';

/** The three routes of one kind of definition, at `/api/v1/{kind}s/:name`. */
function definitionContractsOf<const Url extends string>(
  kind: DefinitionKind,
  url: Url,
  missing: string,
) {
  return {
    get: route({
      method: 'GET',
      url,
      summary: `A${kind === 'agent' ? 'n agent' : ' mission'}'s definition (admin)`,
      responses: { '200': definitionView },
      errors: { '403': 'forbidden', '404': missing },
    }),
    put: route({
      method: 'PUT',
      url,
      summary: `Set the tenant's own definition of a${kind === 'agent' ? 'n agent' : ' mission'} (admin): customized, or created`,
      body: z.record(z.string(), z.unknown()).meta({
        description: `a${kind === 'agent' ? 'n agent' : ' mission'} in the configuration file's shape`,
      }),
      // The definition is checked by the checks start-up applies to the file, after the
      // privilege layer (operator-only keys): the handler does both, in that order.
      handlerValidates: true,
      responses: { '200': definitionView },
      errors: { '400': invalidDefinition, '403': notAdminOrOperatorKey },
    }),
    delete: route({
      method: 'DELETE',
      url,
      summary: "Delete the tenant's own definition (admin): the shipped one is restored",
      responses: {
        '200': z.union([
          definitionView.extend({ restored: z.literal(true) }),
          z.object({ name: z.string(), deleted: z.literal(true) }).meta({
            description: 'a definition the tenant created: gone',
          }),
        ]),
      },
      errors: { '403': 'forbidden', '404': missing, '409': 'not_customized' },
    }),
  };
}

export const definitionContracts = {
  agent: {
    ...definitionContractsOf('agent', '/api/v1/agents/:name', 'unknown_agent'),
    ...revisionContracts.agent,
  },
  mission: {
    ...definitionContractsOf('mission', '/api/v1/missions/:name', 'mission_not_found'),
    ...revisionContracts.mission,
  },
};

/**
 * Agents and missions at runtime, admin only: read a definition, PUT one (the tenant's
 * own: customized, or created), DELETE it (the shipped one is restored), and read its kept
 * revisions and the shipped one (definitionRevisions.ts). A PUT is always a
 * tenant's edit — the operator edits the file — dev mode included: it passes the privilege
 * layer (config/tenancy.ts: `403 operator_only_key` naming the key) and then the checks
 * start-up applies to the file (`400 invalid_definition` naming the key); nothing is
 * written unless both pass. Scoped to the principal's tenant: another tenant's
 * definition is the same 404 as a missing one. Every process's directory picks the change
 * up (a wake-up, and a poll), so workers use it from their next turn.
 *
 * An encapsulated plugin: the `admin` role is checked by its own hook, for these routes
 * only, however their URL was spelled.
 */
export async function definitionsPlugin(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const directory = deps.directory;
  if (!directory) return;
  app.addHook('onRequest', async (request) => {
    if (!hasRole(request.principal, 'admin')) {
      throw new ParleyError('forbidden', 'this needs the admin role');
    }
  });
  const api = typed(app);
  for (const kind of ['agent', 'mission'] as const) {
    definitionRevisionRoutes(app, { db: deps.db, directory }, kind);
    const contracts = definitionContracts[kind];
    api.get(contracts.get.url, routeOptions(contracts.get), async (request) => {
      const name = nameOf(kind, request.params.name);
      const view = describe(directory, kind, request.principal.tenant, name);
      if (!view) throw notFound[kind](name);
      return view;
    });
    api.put(contracts.put.url, routeOptions(contracts.put), async (request) => {
      const name = nameOf(kind, request.params.name);
      const { tenant, user } = request.principal;
      if (!storableJson(request.body)) {
        throw new ParleyError(
          'invalid_request',
          '(body): must not contain NUL characters or unpaired surrogates',
        );
      }
      let definition: Record<string, unknown>;
      try {
        definition =
          kind === 'agent'
            ? directory.checkAgent(tenant, name, request.body ?? {})
            : directory.checkMission(tenant, name, request.body ?? {});
      } catch (error) {
        if (error instanceof OperatorOnlyKeyError) {
          throw new ParleyError('operator_only_key', error.message, { key: error.key });
        }
        if (error instanceof ConfigError)
          throw new ParleyError('invalid_definition', error.message);
        throw error;
      }
      await putDefinition(deps.db, {
        kind,
        tenant,
        name,
        namespace: namespaceOf(definition),
        definition,
        updatedBy: user,
      });
      await directory.refresh();
      const view = describe(directory, kind, tenant, name);
      if (!view) throw notFound[kind](name);
      return view;
    });
    api.delete(contracts.delete.url, routeOptions(contracts.delete), async (request) => {
      const name = nameOf(kind, request.params.name);
      const { tenant, user } = request.principal;
      const outcome = await deleteDefinition(deps.db, { kind, tenant, name, updatedBy: user });
      if (typeof outcome !== 'string') {
        if (!outcome.shipped) throw notFound[kind](name);
        throw new ParleyError(
          'not_customized',
          `the ${kind} "${name}" is the shipped one: nothing to restore`,
        );
      }
      await directory.refresh();
      if (outcome !== 'restored') return { name, deleted: true as const };
      const view = describe(directory, kind, tenant, name);
      if (!view) throw notFound[kind](name);
      return { ...view, restored: true as const };
    });
  }
}

/** A definition as an admin sees it: where it comes from, and the definition itself. */
function describe(directory: Directory, kind: DefinitionKind, tenant: string, name: string) {
  const info = directory.info(kind, tenant, name);
  if (!info) return null;
  // `revision` comes from one sequence for every tenant: the view of one name must not
  // tell how many writes other tenants made (it is the same as for a name nobody has).
  const { revision: _revision, ...origin } = info;
  return { name, ...origin, definition: directory.definition(kind, tenant, name) };
}
