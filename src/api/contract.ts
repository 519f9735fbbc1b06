import type {
  FastifyContextConfig,
  FastifyInstance,
  FastifyRequest,
  FastifySchemaCompiler,
  FastifySerializerCompiler,
  FastifyTypeProvider,
} from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';

/**
 * One route's contract, declared once next to its handler: its request schemas (zod),
 * which validate the request and type the handler; its responses, which document it
 * and, when the app checks responses (the test suite), are held to their schemas; and the
 * prose of the OpenAPI document, which is generated from these (openapi.ts).
 */
export interface RouteContract {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify's spelling (`/x/:sessionId`); the document spells it `/x/{session_id}`. */
  url: string;
  summary: string;
  description?: string;
  /** Answers without a principal (probes, this document): no `security` in the document. */
  public?: boolean;
  querystring?: z.ZodType;
  body?: z.ZodType;
  /**
   * The handler validates the query and body itself (`validate(contract.querystring, …)`),
   * after a check that must answer first (a role): Fastify then only documents them.
   */
  handlerValidates?: boolean;
  /** The body may be left out altogether (every field optional). */
  bodyOptional?: boolean;
  /**
   * A raw request body instead of JSON (an image; a platform's signed payload): the
   * content types it is sent as, documented as binary. The route reads it as bytes, never
   * parsed: it is registered in a scope that takes every body raw (`rawBodies`).
   */
  rawBody?: { contentTypes: readonly string[]; description?: string };
  /** Extra documented parameters Fastify does not validate (a header, say). */
  parameters?: object[];
  /** Status → a JSON body's schema, or a response without a JSON schema (SSE, 204). */
  responses: Record<string, z.ZodType | { description: string; content?: object }>;
  /** Status → the error codes it carries (the body is always `Error`). */
  errors?: Record<string, string>;
}

/** Declares a contract, keeping its literal types for the handler's typing. */
export function route<const C extends RouteContract>(contract: C): C {
  return contract;
}

/**
 * Fastify's type provider for zod: a handler's `request.body`, `query` and `params` are
 * typed as what their schemas parse to, and its reply as what its response schemas accept.
 */
export interface ZodTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends z.ZodType ? z.output<this['schema']> : unknown;
  serializer: this['schema'] extends z.ZodType ? z.input<this['schema']> : unknown;
}

type Params<Url extends string> = Url extends `${string}:${infer Name}/${infer Rest}`
  ? { [K in Name]: string } & Params<`/${Rest}`>
  : Url extends `${string}:${infer Name}`
    ? { [K in Name]: string }
    : unknown;

type ZodOf<T> = T extends z.ZodType ? T : never;

/** The Fastify `schema` of a contract: what Fastify validates, and its JSON responses. */
export type SchemaOf<C extends RouteContract> = {
  params: z.ZodType<Params<C['url']>>;
  querystring: C['handlerValidates'] extends true
    ? undefined
    : C['querystring'] extends z.ZodType
      ? C['querystring']
      : undefined;
  body: C['handlerValidates'] extends true
    ? undefined
    : C['body'] extends z.ZodType
      ? C['body']
      : undefined;
  response: { [S in keyof C['responses']]: ZodOf<C['responses'][S]> };
};

export function schemaOf<C extends RouteContract>(contract: C): SchemaOf<C> {
  const names = [...contract.url.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1] ?? '');
  const response: Record<string, z.ZodType> = {};
  for (const [status, answer] of Object.entries(contract.responses)) {
    if (answer instanceof z.ZodType) response[status] = answer;
  }
  return {
    params: z.object(Object.fromEntries(names.map((name) => [name, z.string()]))),
    ...(contract.querystring && !contract.handlerValidates
      ? { querystring: contract.querystring }
      : {}),
    ...(contract.body && !contract.handlerValidates ? { body: contract.body } : {}),
    response,
  } as unknown as SchemaOf<C>;
}

/**
 * A contract's Fastify route options: its schema (typed, for the handler), and `public`
 * as route config; `config` adds the route's own (missingSession, operator).
 */
export function routeOptions<C extends RouteContract>(
  contract: C,
  config: FastifyContextConfig = {},
): { schema: SchemaOf<C>; config: FastifyContextConfig } {
  return {
    schema: schemaOf(contract),
    config: { ...(contract.public ? { public: true } : {}), ...config },
  };
}

/**
 * Makes every route of this (encapsulated) scope take its body as raw bytes, whatever its
 * content type, up to `bodyLimit`: the scope of contracts with a `rawBody`. The JSON
 * routes outside the scope keep the app's JSON parser; the route checks the type itself
 * (before the body is read, in `preParsing`, where it can).
 */
export function rawBodies(scope: FastifyInstance, bodyLimit: number): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) =>
    done(null, body),
  );
}

/** An upload's `Idempotency-Key` header, as its contract documents it. */
export const idempotencyKeyParameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'A retry with the same key (1-128 of A-Z a-z 0-9 _ -) answers the first upload, storing nothing again',
  schema: { type: 'string' },
};

/**
 * As `rawBodies`, but a body declared `application/json` is parsed as JSON (bounded by
 * `jsonLimit`, the server's body limit): a route that takes either the raw bytes or JSON
 * naming where to copy them from.
 */
export function rawOrJsonBodies(scope: FastifyInstance, rawLimit: number, jsonLimit: number): void {
  rawBodies(scope, rawLimit);
  scope.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit: jsonLimit },
    scope.getDefaultJsonParser('error', 'error'),
  );
}

/** A raw body's declared media type: its `Content-Type` without parameters, lowercased. */
export function declaredMediaType(request: FastifyRequest): string {
  const header = request.headers['content-type'] ?? '';
  return header.split(';')[0]?.trim().toLowerCase() ?? '';
}

/** `app` with handlers typed from their contracts' schemas. */
export function typed(app: FastifyInstance) {
  return app.withTypeProvider<ZodTypeProvider>();
}

/** The first issue of a failed parse, as every 400 `invalid_request` names it. */
export function invalidRequest(error: z.ZodError): ParleyError {
  const issue = error.issues[0];
  const field = issue?.path.map(String).join('.') || '(body)';
  return new ParleyError('invalid_request', `${field}: ${issue?.message ?? 'invalid'}`, { field });
}

/**
 * Validates a request part with its zod schema: an absent body or query reads as `{}`;
 * a failure is the same coded 400 a hand-written check gives (`field`, never the value).
 */
export const validatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema }) =>
  (data) => {
    const parsed = schema.safeParse(data ?? {});
    return parsed.success ? { value: parsed.data } : { error: invalidRequest(parsed.error) };
  };

/**
 * Serializes a JSON response. With `check` (the test suite), the body as it goes on the
 * wire is first held to its schema: a mismatch fails the request with a 500, logged, so
 * any test exercising a route checks its answers. Without it, exactly `JSON.stringify`.
 */
export function serializerCompiler(check: boolean): FastifySerializerCompiler<z.ZodType> {
  return ({ schema, method, url, httpStatus }) =>
    (data) => {
      const json = JSON.stringify(data);
      if (check) {
        const parsed = schema.safeParse(JSON.parse(json));
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw new Error(
            `the ${httpStatus} response of ${method} ${url} does not match its schema: ` +
              `${issue?.path.map(String).join('.') ?? ''}: ${issue?.message ?? 'invalid'}`,
          );
        }
      }
      return json;
    };
}
