import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { namespaceOf, type Directory } from '../agents/directory.js';
import { ParleyError } from '../errors.js';
import { definitionRevision, definitionRevisionView } from '../protocol/definitions.js';
import { page } from '../protocol/rest.js';
import type { Db } from '../store/db.js';
import type { DefinitionKind } from '../store/definitions.js';
import { listDefinitionRevisions, type RevisionEntry } from '../store/listDefinitionRevisions.js';
import { readDefinitionRevision } from '../store/readDefinitionRevision.js';
import { route, routeOptions, typed } from './contract.js';
import { nameOf, notFound } from './definitionNames.js';

/** A revision number as the path and the cursor spell it (the sequence starts at 1). */
const revisionNumber = /^[1-9]\d{0,14}$/;

const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().regex(revisionNumber, 'not a cursor this server made').optional(),
});

/**
 * The read-only routes of one kind's kept revisions, beside its definition routes
 * (definitions.ts) and under the same admin hook: the revisions listed newest first, one
 * revision whole, and the shipped definition.
 */
function revisionContractsOf<const Url extends string>(
  kind: DefinitionKind,
  url: Url,
  missing: string,
) {
  const what = kind === 'agent' ? 'an agent' : 'a mission';
  return {
    revisions: route({
      method: 'GET',
      url: `${url}/revisions`,
      summary: `The revisions of ${what}'s definition this tenant has had, newest first (admin): shipped, edited, restored`,
      querystring: pageQuery,
      responses: { '200': page(definitionRevision) },
      errors: { '400': 'invalid_request', '403': 'forbidden', '404': missing },
    }),
    revision: route({
      method: 'GET',
      url: `${url}/revisions/:revision`,
      summary: `One revision of ${what}'s definition, whole (admin)`,
      responses: { '200': definitionRevisionView },
      errors: {
        '400': 'invalid_request (not a revision number)',
        '403': 'forbidden',
        '404': `${missing}, or revision_not_found: a revision this tenant's definition never had`,
      },
    }),
    shipped: route({
      method: 'GET',
      url: `${url}/shipped`,
      summary: `The shipped definition of ${what}: what a DELETE of the tenant's own restores (admin)`,
      responses: { '200': definitionRevisionView },
      errors: {
        '403': 'forbidden',
        '404': `${missing}, or not_shipped: the tenant created it (nothing shipped)`,
      },
    }),
  };
}

export const revisionContracts = {
  agent: revisionContractsOf('agent', '/api/v1/agents/:name', 'unknown_agent'),
  mission: revisionContractsOf('mission', '/api/v1/missions/:name', 'mission_not_found'),
};

/**
 * Registers the revision routes of one kind in the definitions plugin (its admin hook
 * answers first). Tenant-scoped like the definition itself: a name the tenant does not
 * have now is the 404 of a missing one, and a revision is one of the shipped definition's
 * or of the tenant's own, never another tenant's. Definitions hold names of environment
 * variables, never their values, so a revision is shown whole, as GET of the definition
 * shows it.
 */
export function definitionRevisionRoutes(
  app: FastifyInstance,
  deps: { db: Db; directory: Directory },
  kind: DefinitionKind,
): void {
  const { db, directory } = deps;
  const contracts = revisionContracts[kind];
  const api = typed(app);

  /** The name from the path and the revision the tenant's definition is now (404: none). */
  const visible = (raw: string, tenant: string) => {
    const name = nameOf(kind, raw);
    const info = directory.info(kind, tenant, name);
    if (!info) throw notFound[kind](name);
    return { name, current: info.revision };
  };

  api.get(contracts.revisions.url, routeOptions(contracts.revisions), async (request) => {
    const tenant = request.principal.tenant;
    const { name, current } = visible(request.params.name, tenant);
    const { cursor, limit } = request.query;
    const found = await listDefinitionRevisions(db, {
      kind,
      tenant,
      name,
      before: cursor === undefined ? null : Number(cursor),
      limit,
    });
    const last = found.items.at(-1);
    return {
      items: found.items.map((entry) => entryView(entry, current)),
      next_cursor: found.more && last ? String(last.revision) : null,
    };
  });

  api.get(contracts.revision.url, routeOptions(contracts.revision), async (request) => {
    const tenant = request.principal.tenant;
    const { name, current } = visible(request.params.name, tenant);
    const raw = request.params.revision;
    if (!revisionNumber.test(raw)) {
      throw new ParleyError('invalid_request', 'revision: a revision number', {
        field: 'revision',
      });
    }
    const kept = await readDefinitionRevision(db, { kind, tenant, name, revision: Number(raw) });
    if (!kept) {
      throw new ParleyError('revision_not_found', `no such revision of this ${kind}`);
    }
    return {
      name,
      namespace: namespaceOf(kept.definition),
      ...entryView(kept, current),
      definition: kept.definition,
    };
  });

  api.get(contracts.shipped.url, routeOptions(contracts.shipped), async (request) => {
    const { name, current } = visible(request.params.name, request.principal.tenant);
    const shipped = directory.info(kind, '', name);
    const definition = directory.definition(kind, '', name);
    if (!shipped || !definition) {
      throw new ParleyError('not_shipped', `the ${kind} "${name}" was created here: none shipped`);
    }
    return {
      name,
      namespace: shipped.namespace,
      revision: shipped.revision,
      content_hash: shipped.content_hash,
      source: 'shipped' as const,
      created_at: shipped.updated_at,
      created_by: null,
      current: shipped.revision === current,
      definition,
    };
  });
}

function entryView(entry: RevisionEntry, current: number) {
  return {
    revision: entry.revision,
    content_hash: entry.content_hash,
    source: entry.source,
    created_at: entry.created_at.toISOString(),
    created_by: entry.created_by,
    current: entry.revision === current,
  };
}
