import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Principal } from '../../config/types.js';
import { route, routeOptions } from '../contract.js';
import type { ApiDeps } from '../deps.js';
import { JournalFeed } from '../feed.js';
import { idempotencyMetaKey } from './callTurn.js';
import { McpEventLog } from './eventLog.js';

/** The SDK's server side, loaded with the first MCP session: most processes serve none. */
let sdk: Promise<{
  StreamableHTTPServerTransport: typeof StreamableHTTPServerTransport;
  buildMcpServer: typeof import('./server.js').buildMcpServer;
}> | null = null;
const loadSdk = () =>
  (sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('./server.js'),
  ]).then(([http, server]) => ({
    StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    buildMcpServer: server.buildMcpServer,
  })));

/** A JSON-RPC message as the route looks at it before the SDK does. */
type JsonRpc = { method?: unknown; id?: unknown; params?: unknown };
const isObject = (message: unknown): message is JsonRpc =>
  typeof message === 'object' && message !== null && !Array.isArray(message);
const isRequest = (message: unknown): message is JsonRpc & { id: RequestId } =>
  isObject(message) &&
  typeof message.method === 'string' &&
  (typeof message.id === 'string' || typeof message.id === 'number');
const isInitialize = (message: unknown) => isRequest(message) && message.method === 'initialize';
const isCancel = (message: unknown): message is JsonRpc =>
  isObject(message) && message.method === 'notifications/cancelled' && message.id === undefined;

/** Where MCP clients connect (Streamable HTTP). */
export const mcpPath = '/mcp';

/** An MCP session nobody used for this long is closed (the client initializes again). */
const idleMs = 30 * 60_000;

/**
 * The first protocol version whose clients are told a stream's event ids (the SDK's
 * priming event) and reconnect with `Last-Event-ID` when a stream breaks.
 */
const resumableSince = '2025-11-25';

const jsonRpcMessage = z.record(z.string(), z.unknown()).meta({
  description: 'a JSON-RPC 2.0 message of the Model Context Protocol (or a batch of them)',
});

const sessionHeader = {
  name: 'Mcp-Session-Id',
  in: 'header',
  required: false,
  description: 'the MCP session the initialize answer named (every request after initialize)',
  schema: { type: 'string' },
};

const mcpErrors = {
  '400': 'a JSON-RPC error (the MCP SDK shape: `{"jsonrpc", "error": {"code", "message"}, "id"}`)',
  '401': 'unauthorized',
  '404': 'a JSON-RPC error -32001: no such MCP session (initialize again)',
};

export const mcpContracts = {
  post: route({
    method: 'POST',
    url: mcpPath,
    summary: "MCP server (Streamable HTTP): the principal's agents as tools",
    description: `JSON-RPC messages of the Model Context Protocol: initialize, tools/list (one tool per agent), tools/call (a turn; \`_meta["${idempotencyMetaKey}"]\` is its turn id; with a \`task\` param answered at once with the task), tasks/get, tasks/result, tasks/list, tasks/cancel (a task is its turn, read from the journal). Answered as JSON or an SSE stream (progress, elicitation, then the result). docs/protocols.md, "MCP server".`,
    body: z.union([jsonRpcMessage, z.array(jsonRpcMessage)]),
    handlerValidates: true,
    parameters: [sessionHeader],
    responses: {
      '200': { description: 'a JSON-RPC answer, as application/json or text/event-stream' },
      '202': { description: 'notifications and responses accepted' },
    },
    errors: mcpErrors,
  }),
  get: route({
    method: 'GET',
    url: mcpPath,
    summary:
      'MCP server: with Last-Event-ID, the rest of a broken stream (resumability); else 405 (no stream of its own)',
    parameters: [
      sessionHeader,
      {
        name: 'Last-Event-ID',
        in: 'header',
        required: false,
        description: 'the id of the last event the client got on the stream that broke',
        schema: { type: 'string' },
      },
    ],
    responses: {
      '200': { description: 'text/event-stream: the events after the cursor, then the rest live' },
      '405': { description: 'a JSON-RPC error: method not allowed (no Last-Event-ID)' },
    },
    errors: mcpErrors,
  }),
  delete: route({
    method: 'DELETE',
    url: mcpPath,
    summary: 'MCP server: end an MCP session (its turns go on)',
    parameters: [sessionHeader],
    responses: { '200': { description: 'the session is closed' } },
    errors: mcpErrors,
  }),
};

/** One MCP session: its SDK server and transport, held by the process that initialized it. */
interface McpSession {
  transport: StreamableHTTPServerTransport;
  server: Server;
  /** Whose session it is: another principal's request finds no such session. */
  tenant: string;
  user: string;
  principal: Principal;
  lastSeen: number;
  /** Requests the client cancelled (`notifications/cancelled`). */
  cancelled: Set<RequestId>;
  /**
   * Requests whose answer is under way, with their HTTP response's closing (null: the
   * client may reconnect to the stream, so its closing does not end the call).
   */
  connections: Map<RequestId, AbortSignal | null>;
}

/**
 * Parley as an MCP server (docs/protocols.md, "MCP server"): the SDK's Streamable HTTP
 * transport behind Parley's own authentication. An MCP session lives in the process that
 * initialized it (the handshake, the client's capabilities, an elicitation's pending
 * answer); what a call does is a turn in the journal, which any process can follow.
 */
export async function mcpPlugin(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const feed = new JournalFeed(deps.db, deps.wakeups, deps.config.runtime.pollMs);
  const sessions = new Map<string, McpSession>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const session of sessions.values()) {
      if (now - session.lastSeen > idleMs && session.connections.size === 0) {
        void session.transport.close();
      }
    }
  }, 60_000);
  sweep.unref();
  app.addHook('onClose', async () => {
    clearInterval(sweep);
    feed.stop();
    await Promise.all([...sessions.values()].map((session) => session.transport.close()));
  });
  // The body reaches the SDK as it came: a malformed one is its JSON-RPC parse error.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit: deps.config.server.bodyLimitBytes },
    (_request, body, done) => done(null, body),
  );

  const { post, get, delete: end } = mcpContracts;
  app.post(post.url, routeOptions(post), async (request, reply) => {
    let message: unknown;
    try {
      message = JSON.parse(typeof request.body === 'string' ? request.body : '');
    } catch {
      return jsonRpcError(reply, 400, -32700, 'Parse error: Invalid JSON');
    }
    const session = sessionOf(request);
    if (session === 'missing') return jsonRpcError(reply, 404, -32001, 'Session not found');
    if (session === null) {
      if (!isInitialize(message)) {
        return jsonRpcError(reply, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      }
      return handOver(request, reply, await open(request.principal), message);
    }
    const messages = Array.isArray(message) ? message : [message];
    for (const each of messages) {
      // Noted before the SDK aborts the handler: a cancel is not a client that left.
      if (isCancel(each)) {
        const requestId = (each.params as { requestId?: RequestId } | undefined)?.requestId;
        if (requestId !== undefined) session.cancelled.add(requestId);
      }
    }
    const closed = new AbortController();
    const requestIds = messages.filter(isRequest).map((each) => each.id);
    const resumable = String(request.headers['mcp-protocol-version'] ?? '') >= resumableSince;
    for (const requestId of requestIds) {
      session.connections.set(requestId, resumable ? null : closed.signal);
    }
    reply.raw.on('close', () => {
      closed.abort();
      for (const requestId of requestIds) {
        session.connections.delete(requestId);
        session.cancelled.delete(requestId);
      }
    });
    await handOver(request, reply, session, message);
  });

  app.get(get.url, routeOptions(get), async (request, reply) => {
    if (request.headers['last-event-id'] !== undefined) {
      const session = sessionOf(request);
      if (session === null) {
        return jsonRpcError(reply, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      }
      if (session === 'missing') return jsonRpcError(reply, 404, -32001, 'Session not found');
      return handOver(request, reply, session, undefined);
    }
    void reply.header('allow', 'POST, DELETE');
    return jsonRpcError(
      reply,
      405,
      -32000,
      'Method not allowed: this server sends no stream of its own',
    );
  });

  app.delete(end.url, routeOptions(end), async (request, reply) => {
    const session = sessionOf(request);
    if (session === null) {
      return jsonRpcError(reply, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    }
    if (session === 'missing') return jsonRpcError(reply, 404, -32001, 'Session not found');
    return handOver(request, reply, session, undefined);
  });

  /** The request's MCP session: null without the header, `missing` if not this principal's. */
  function sessionOf(request: FastifyRequest): McpSession | null | 'missing' {
    const header = request.headers['mcp-session-id'];
    if (header === undefined) return null;
    const session = typeof header === 'string' ? sessions.get(header) : undefined;
    const principal = request.principal;
    if (!session || session.tenant !== principal.tenant || session.user !== principal.user) {
      return 'missing';
    }
    session.principal = principal;
    session.lastSeen = Date.now();
    return session;
  }

  /** A new MCP session for `principal`, kept once its initialize is answered. */
  async function open(principal: Principal): Promise<McpSession> {
    const { StreamableHTTPServerTransport, buildMcpServer } = await loadSdk();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, session);
      },
      keepAliveMs: deps.config.server.keepaliveMs,
      eventStore: new McpEventLog(),
      retryInterval: 1000,
    });
    const session: McpSession = {
      transport,
      server: buildMcpServer({
        deps,
        feed,
        principal: () => session.principal,
        cancelledByClient: (requestId) => session.cancelled.has(requestId),
        connectionOf: (requestId) => session.connections.get(requestId) ?? undefined,
      }),
      tenant: principal.tenant,
      user: principal.user,
      principal,
      lastSeen: Date.now(),
      cancelled: new Set(),
      connections: new Map(),
    };
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    return session;
  }

  /** The reply is the SDK transport's from here on, with the headers Parley set. */
  async function handOver(
    request: FastifyRequest,
    reply: FastifyReply,
    session: McpSession,
    message: unknown,
  ): Promise<void> {
    if (!session.server.transport) await session.server.connect(session.transport);
    reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value);
    }
    await session.transport.handleRequest(request.raw, reply.raw, message);
  }
}

/** A JSON-RPC error in the SDK's shape, for what Parley answers before the SDK does. */
function jsonRpcError(
  reply: FastifyReply,
  status: number,
  code: number,
  message: string,
): FastifyReply {
  return reply
    .status(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', error: { code, message }, id: null });
}
