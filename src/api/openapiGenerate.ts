import { z } from 'zod';
import type { RouteContract } from './contract.js';

/** What the generated part of the document adds: its paths and its named schemas. */
export interface GeneratedDocument {
  paths: Record<string, Record<string, object>>;
  schemas: Record<string, object>;
}

const errorRef = { $ref: '#/components/schemas/Error' };
const binary = { type: 'string', format: 'binary' };
const successText: Record<string, string> = { '200': 'OK', '201': 'Created', '202': 'Accepted' };

/** `/x/:sessionId` → `/x/{session_id}`: the document's spelling of a route's URL. */
export function documentPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, (_match, name: string) => `{${snakeCase(name)}}`);
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/**
 * The OpenAPI paths of these routes, from their contracts: parameters, request body and
 * responses are their zod schemas as JSON Schema (zod 4's `z.toJSONSchema`), requests as
 * they are accepted and responses as they are sent; schemas named with `.meta({id})` go
 * to `components.schemas` once and are referenced.
 */
export function generateDocument(contracts: readonly RouteContract[]): GeneratedDocument {
  const schemas: Record<string, object> = {};
  const toJson = (schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> => {
    const {
      $defs,
      $schema: _dialect,
      ...json
    } = z.toJSONSchema(schema, {
      io,
      unrepresentable: 'any',
    }) as Record<string, unknown> & { $defs?: Record<string, object> };
    for (const [id, named] of Object.entries($defs ?? {})) schemas[id] ??= tidy(named) as object;
    return tidy(json) as Record<string, unknown>;
  };
  const paths: GeneratedDocument['paths'] = {};
  for (const contract of contracts) {
    const parameters: object[] = [...contract.url.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => ({
      name: snakeCase(match[1] ?? ''),
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (contract.querystring) {
      const query = toJson(contract.querystring, 'input') as {
        properties?: Record<string, object>;
        required?: string[];
      };
      for (const [name, schema] of Object.entries(query.properties ?? {})) {
        parameters.push({
          name,
          in: 'query',
          ...(query.required?.includes(name) ? { required: true } : {}),
          schema,
        });
      }
    }
    parameters.push(...(contract.parameters ?? []));
    const responses: Record<string, object> = {};
    for (const [status, answer] of Object.entries(contract.responses)) {
      responses[status] =
        answer instanceof z.ZodType
          ? {
              description: successText[status] ?? answer.meta()?.description ?? '',
              content: { 'application/json': { schema: toJson(answer, 'output') } },
            }
          : answer;
    }
    for (const [status, codes] of Object.entries(contract.errors ?? {})) {
      responses[status] = {
        description: codes,
        content: { 'application/json': { schema: errorRef } },
      };
    }
    const operation = {
      summary: contract.summary,
      ...(contract.description ? { description: contract.description } : {}),
      ...(contract.public ? { security: [] } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(contract.rawBody
        ? {
            requestBody: {
              required: true,
              ...(contract.rawBody.description
                ? { description: contract.rawBody.description }
                : {}),
              content: Object.fromEntries(
                contract.rawBody.contentTypes.map((type) => [type, { schema: binary }]),
              ),
            },
          }
        : {}),
      ...(contract.body
        ? {
            requestBody: {
              ...(contract.bodyOptional ? {} : { required: true }),
              content: {
                // A route taking either (a raw image, or JSON naming one) documents both.
                ...(contract.rawBody
                  ? Object.fromEntries(
                      contract.rawBody.contentTypes.map((type) => [type, { schema: binary }]),
                    )
                  : {}),
                'application/json': { schema: toJson(contract.body, 'input') },
              },
            },
          }
        : {}),
      responses,
    };
    const path = documentPath(contract.url);
    paths[path] = { ...paths[path], [contract.method.toLowerCase()]: operation };
  }
  return { paths, schemas };
}

const safeInteger = Number.MAX_SAFE_INTEGER;

/**
 * Points `$defs` references at `components.schemas`, and drops the bounds zod writes for
 * every integer (the safe-integer range), which say nothing a reader needs.
 */
function tidy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(tidy);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === '$ref' && typeof item === 'string') {
      out[key] = item.replace('#/$defs/', '#/components/schemas/');
    } else if (key === 'minimum' && item === -safeInteger) {
      continue;
    } else if (key === 'maximum' && item === safeInteger) {
      continue;
    } else {
      out[key] = tidy(item);
    }
  }
  return out;
}
