import type { FastifyInstance, FastifyReply } from 'fastify';
import { namespaceOf, type Directory } from '../agents/directory.js';
import { ConfigError } from '../config/errors.js';
import { missionName } from '../config/schema.js';
import { OperatorOnlyKeyError } from '../config/tenancy.js';
import { ParleyError } from '../errors.js';
import type { DefinitionKind } from '../store/definitions.js';
import { deleteDefinition } from '../store/deleteDefinition.js';
import { putDefinition } from '../store/putDefinition.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { pathId, storableJson } from './validate.js';

const notFound = {
  agent: (name: string) => new ParleyError('unknown_agent', `no agent named "${name}"`),
  mission: (name: string) => new ParleyError('mission_not_found', `no mission named "${name}"`),
};

/**
 * Agents and missions at runtime, admin only: read a definition, PUT one (the tenant's
 * own: customized, or created), DELETE it (the shipped one is restored). A PUT is always a
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
  for (const kind of ['agent', 'mission'] as const) {
    const path = `/api/v1/${kind}s/:name`;
    app.get<{ Params: { name: string } }>(path, async (request) => {
      const name = nameOf(kind, request.params.name);
      const view = describe(directory, kind, request.principal.tenant, name);
      if (!view) throw notFound[kind](name);
      return view;
    });
    app.put<{ Params: { name: string } }>(path, async (request) => {
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
      return describe(directory, kind, tenant, name);
    });
    app.delete<{ Params: { name: string } }>(path, async (request, reply: FastifyReply) => {
      const name = nameOf(kind, request.params.name);
      const tenant = request.principal.tenant;
      const outcome = await deleteDefinition(deps.db, { kind, tenant, name });
      if (typeof outcome !== 'string') {
        if (!outcome.shipped) throw notFound[kind](name);
        throw new ParleyError(
          'not_customized',
          `the ${kind} "${name}" is the shipped one: nothing to restore`,
        );
      }
      await directory.refresh();
      return reply.send(
        outcome === 'restored'
          ? { ...describe(directory, kind, tenant, name), restored: true }
          : { name, deleted: true },
      );
    });
  }
}

function nameOf(kind: DefinitionKind, raw: string): string {
  const name = pathId(raw, 'name');
  if (kind === 'mission' && !missionName.safeParse(name).success) {
    throw new ParleyError('invalid_request', 'name: letters, digits, _ and - (at most 64)', {
      field: 'name',
    });
  }
  return name;
}

/** A definition as an admin sees it: where it comes from, and the definition itself. */
function describe(directory: Directory, kind: DefinitionKind, tenant: string, name: string) {
  const info = directory.info(kind, tenant, name);
  if (!info) return null;
  return { name, ...info, definition: directory.definition(kind, tenant, name) };
}
