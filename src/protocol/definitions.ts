import { z } from 'zod';
import { timestamp } from './rest.js';

/**
 * The kept revisions of an agent's or a mission's definition, as an admin reads them
 * (GET /api/v1/agents/{name}/revisions…, /shipped), declared once like those of rest.ts:
 * the server's routes validate and document them, `parley/client` takes its types from
 * them (type imports only).
 */

export const revisionSource = z.enum(['shipped', 'edited', 'restored']).meta({
  description:
    "`shipped`: the operator's configuration; `edited`: a tenant admin's PUT; `restored`: a DELETE that gave the tenant the shipped definition back",
});

const revisionFields = {
  revision: z.number().int().meta({
    description:
      'from one sequence for every definition: what a turn records as its `agent_revision`',
  }),
  content_hash: z.string(),
  source: revisionSource,
  created_at: timestamp,
  created_by: z
    .string()
    .nullable()
    .meta({ description: 'the admin who wrote it (null: the configuration)' }),
  current: z.boolean().meta({
    description:
      "the revision the tenant's definition is now (`revision` of GET /api/v1/agents); after a restore, the shipped revision it went back to",
  }),
};

/** One kept revision in a listing (newest first). */
export const definitionRevision = z.object(revisionFields).meta({ id: 'DefinitionRevision' });

/** One revision with the definition it had, in the configuration file's shape. */
export const definitionRevisionView = z
  .object({
    name: z.string(),
    namespace: z.string(),
    ...revisionFields,
    definition: z
      .record(z.string(), z.unknown())
      .meta({ description: "the configuration file's shape, defaults applied" }),
  })
  .meta({ id: 'DefinitionRevisionView' });

export type RevisionSource = z.infer<typeof revisionSource>;
export type DefinitionRevision = z.infer<typeof definitionRevision>;
export type DefinitionRevisionView = z.infer<typeof definitionRevisionView>;
