import { isIP } from 'node:net';
import { z } from 'zod';
import { ToolError, type Tool, type ToolContext } from '../types.js';
import { hostAllowed, parseHostRule, type HostRule } from './hosts.js';
import { checkAddress, guardedLookup, systemResolve, type Resolve } from './lookup.js';
import { readableText } from './readable.js';

export interface HttpFetchOptions {
  allowHosts: HostRule[];
  allowPrivate: boolean;
  maxBytes: number;
  methods: ('GET' | 'POST')[];
  maxRedirects: number;
}

const optionsSchema = z
  .object({
    allow_hosts: z.array(z.string()).min(1, 'list at least one host'),
    allow_private: z.boolean().default(false),
    // At most 100 MiB: the body is held in memory.
    max_bytes: z.number().int().positive().max(104_857_600).default(1_000_000),
    methods: z
      .array(z.enum(['GET', 'POST']))
      .min(1)
      .default(['GET']),
    max_redirects: z.number().int().min(0).max(20).default(5),
  })
  .strict();

function compileOptions(raw: Record<string, unknown>): HttpFetchOptions {
  const parsed = optionsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${issue?.path.map(String).join('.') || 'allow_hosts'}: ${issue?.message}`);
  }
  const allowHosts = parsed.data.allow_hosts.map((entry, index) => {
    const rule = parseHostRule(entry);
    if (!rule) throw new Error(`allow_hosts.${index}: not a host name, *.domain or host:port`);
    return rule;
  });
  return {
    allowHosts,
    allowPrivate: parsed.data.allow_private,
    maxBytes: parsed.data.max_bytes,
    methods: parsed.data.methods,
    maxRedirects: parsed.data.max_redirects,
  };
}

export interface HttpFetchResult {
  url: string;
  status: number;
  content_type: string;
  /** Readable text of the body (HTML converted), or null for binary content. */
  text: string | null;
  bytes: number;
  /** The body was longer than `max_bytes`: `text` is its beginning only. */
  truncated: boolean;
}

export interface Exchange {
  status: number;
  location: string | null;
  contentType: string;
  body: Uint8Array;
  truncated: boolean;
}

/** Reads at most `maxBytes` of a body, then stops reading (the socket is destroyed). */
async function readCapped(
  body: AsyncIterable<Uint8Array> & { destroy(): unknown },
  maxBytes: number,
): Promise<{ body: Uint8Array; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size + chunk.length > maxBytes) {
      chunks.push(chunk.subarray(0, maxBytes - size));
      body.destroy();
      return { body: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

/** Whether `url` may be fetched: http(s), no credentials, an allowed host, a public address. */
export function checkUrl(
  url: URL,
  options: Pick<HttpFetchOptions, 'allowHosts' | 'allowPrivate'>,
  redirected: boolean,
): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ToolError('not_allowed', `only http and https URLs can be fetched`);
  }
  if (url.username || url.password) {
    throw new ToolError('not_allowed', 'URLs with credentials are not fetched');
  }
  if (!hostAllowed(options.allowHosts, url)) {
    throw new ToolError(
      'not_allowed',
      redirected
        ? `the answer redirected to ${url.host}, which is not on this agent's allow-list; ` +
            'the redirect was not followed'
        : `${url.host} is not on this agent's allow-list for http_fetch; nothing was fetched`,
    );
  }
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  // A literal address skips name resolution: check it here.
  if (isIP(literal)) checkAddress(url.hostname, literal, options.allowPrivate);
}

/**
 * One request and its answer (a redirect is not followed here), connecting only to the
 * addresses the guarded lookup checked, the body read up to `maxBytes`, within the
 * context's signal and time limit. Failures are ToolErrors naming the host.
 */
export async function exchange(
  url: URL,
  method: 'GET' | 'POST',
  body: string | undefined,
  options: Pick<HttpFetchOptions, 'allowPrivate' | 'maxBytes'>,
  resolve: Resolve,
  context: Pick<ToolContext, 'signal' | 'timeoutMs'>,
): Promise<Exchange> {
  const failures: ToolError[] = [];
  // Loaded on the first fetch rather than at every process's start.
  const { Agent, request } = await import('undici');
  const dispatcher = new Agent({
    connect: { lookup: guardedLookup(resolve, options.allowPrivate, failures) },
    connections: 1,
    pipelining: 0,
  });
  try {
    const response = await request(url, {
      method,
      dispatcher,
      signal: context.signal,
      headers: {
        'user-agent': 'Parley-http_fetch/1',
        accept: 'text/html, text/plain;q=0.9, application/json;q=0.9, */*;q=0.5',
        'accept-encoding': 'identity',
        ...(body === undefined
          ? {}
          : { 'content-type': isJson(body) ? 'application/json' : 'text/plain; charset=utf-8' }),
      },
      ...(body === undefined ? {} : { body }),
      headersTimeout: context.timeoutMs,
      bodyTimeout: context.timeoutMs,
    });
    const header = (name: string) => {
      const value = response.headers[name];
      return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
    };
    const redirect = response.statusCode >= 300 && response.statusCode < 400;
    const read = redirect
      ? (await response.body.dump(), { body: new Uint8Array(), truncated: false })
      : await readCapped(response.body, options.maxBytes);
    return {
      status: response.statusCode,
      location: header('location'),
      contentType: header('content-type') ?? '',
      ...read,
    };
  } catch (error) {
    if (failures[0]) throw failures[0];
    if (error instanceof ToolError) throw error;
    if (context.signal.aborted) {
      const reason: unknown = context.signal.reason;
      throw reason instanceof ToolError
        ? new ToolError(
            reason.code,
            `no complete answer from ${url.host} in time (${reason.message})`,
          )
        : new ToolError('aborted', 'http_fetch was cancelled');
    }
    const code = (error as { code?: string }).code ?? '';
    if (/TIMEOUT/.test(code)) {
      throw new ToolError(
        'timeout',
        `no complete answer from ${url.host} within ${context.timeoutMs} ms`,
      );
    }
    throw new ToolError(
      'unavailable',
      `cannot fetch from ${url.host} (${code || 'connection failed'})`,
    );
  } finally {
    void dispatcher.destroy().catch(() => undefined);
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * `http_fetch {url, method?, body?}`: GET (POST where the agent's `methods` allow it) a URL
 * on the agent's allow-list. Redirects are followed only to allowed hosts (at most
 * `max_redirects`); every connection goes through a lookup that refuses internal
 * addresses after resolution (see lookup.ts); the body is read up to `max_bytes`, the
 * whole exchange within the call's time limit. `resolve` is injected for tests.
 */
export function createHttpFetch(resolve: Resolve = systemResolve): Tool {
  return {
    name: 'http_fetch',
    description:
      'Fetches a web page or API response over HTTP(S) from an allowed host and returns it ' +
      'as readable text (HTML converted to text). Arguments: url, optional method (GET or ' +
      'POST) and body (a string; JSON is sent as application/json).',
    inputSchema: {
      type: 'object',
      properties: {
        url: { type: 'string', maxLength: 2048, description: 'an http or https URL' },
        method: { type: 'string', enum: ['GET', 'POST'] },
        body: { type: 'string', maxLength: 65536, description: 'request body for POST' },
      },
      required: ['url'],
      additionalProperties: false,
    },
    defaultTimeoutMs: 10_000,
    compileOptions,
    async execute(args, context): Promise<HttpFetchResult> {
      const options = context.options as Partial<HttpFetchOptions>;
      if (!options.allowHosts || !options.methods) {
        throw new ToolError('not_allowed', 'http_fetch has no allow-list for this agent');
      }
      const input = args as { url: string; method?: 'GET' | 'POST'; body?: string };
      const allowed = options as HttpFetchOptions;
      let method = input.method ?? 'GET';
      if (!options.methods.includes(method)) {
        throw new ToolError('not_allowed', `${method} is not allowed for this agent's http_fetch`);
      }
      if (input.body !== undefined && method === 'GET') {
        throw new ToolError('invalid_arguments', 'a body is only sent with POST');
      }
      let body = input.body;
      let url: URL;
      try {
        url = new URL(input.url);
      } catch {
        throw new ToolError('invalid_arguments', 'url is not a valid absolute URL');
      }
      for (let redirects = 0; ; redirects += 1) {
        checkUrl(url, allowed, redirects > 0);
        const answer = await exchange(url, method, body, allowed, resolve, context);
        if (answer.status >= 300 && answer.status < 400 && answer.location !== null) {
          if (redirects >= allowed.maxRedirects) {
            throw new ToolError('not_allowed', `more than ${allowed.maxRedirects} redirects`);
          }
          url = new URL(answer.location, url);
          // As browsers do: 303 always, 301/302 after POST, continue as GET without a body.
          if (answer.status === 303 || (method === 'POST' && answer.status <= 302)) {
            method = 'GET';
            body = undefined;
          }
          continue;
        }
        const readable = await readableText(answer.body, answer.contentType);
        return {
          url: url.toString(),
          status: answer.status,
          content_type: answer.contentType,
          text: readable.text,
          bytes: answer.body.length,
          truncated: answer.truncated,
        };
      }
    },
  };
}
