import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type CreateTaskResult,
  type RequestId,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Principal } from '../../config/types.js';
import { isParleyError, ParleyError } from '../../errors.js';
import { clientKeyPattern } from '../../ids.js';
import { agentsOf, type ApiDeps } from '../deps.js';
import type { JournalFeed } from '../feed.js';
import { linkedSignal } from '../../linkedSignal.js';
import { callTurn, idempotencyMetaKey } from './callTurn.js';
import { elicitThrough } from './elicitation.js';
import { cancelTask, createTask, getTask, listTasks, taskResult, taskTurnId } from './tasks.js';
import { resultOf } from './toolResult.js';

/** MCP's tool names; Parley's agent names already fit, and any that does not is not listed. */
const toolNamePattern = /^[A-Za-z0-9_.-]{1,128}$/;

const callArguments = z
  .object({
    message: z.string(),
    session_id: z.string().min(1).max(128).optional(),
  })
  .strict();

const inputSchema = {
  type: 'object' as const,
  properties: {
    message: { type: 'string', description: 'what to tell the agent' },
    session_id: {
      type: 'string',
      description: "a Parley session to continue (a previous call's session_id); none: a new one",
    },
  },
  required: ['message'],
  additionalProperties: false,
};

const outputSchema = {
  type: 'object' as const,
  properties: {
    session_id: { type: 'string' },
    turn_id: { type: 'string' },
    status: {
      type: 'string',
      enum: ['completed', 'failed', 'cancelled', 'input_required', 'in_progress'],
    },
    reply: { type: 'string' },
    request_id: { type: 'string', description: 'the request the turn waits on (input_required)' },
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' } },
      required: ['code', 'message'],
    },
  },
  required: ['session_id', 'turn_id', 'status', 'reply'],
};

/** What the MCP server of one MCP session reads from its HTTP side (routes.ts). */
export interface McpSessionIo {
  deps: ApiDeps;
  feed: JournalFeed;
  /** The principal of the request being handled (the session's, with its current roles). */
  principal: () => Principal;
  /** Did the client send `notifications/cancelled` for this request? */
  cancelledByClient: (requestId: RequestId) => boolean;
  /** Aborts when the HTTP response carrying this request's answer closes. */
  connectionOf: (requestId: RequestId) => AbortSignal | undefined;
}

/**
 * Parley's agents as MCP tools (docs/protocols.md, "MCP server"): `tools/list` lists the
 * principal's agents, `tools/call` runs a turn of one (callTurn.ts) — with a `task` param,
 * a task the `tasks/*` methods follow (tasks.ts). One server per MCP session; everything
 * durable is in Parley's journal.
 */
export function buildMcpServer(io: McpSessionIo): Server {
  const server = new Server(
    { name: 'parley', version: '1' },
    {
      capabilities: {
        tools: { listChanged: false },
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      instructions:
        "Each tool is one of Parley's agents: call it with a message; pass the session_id it answers to continue the conversation.",
    },
  );

  /** What a task method reads: the request's principal, the journal (tasks.ts). */
  const taskIo = () => ({ deps: io.deps, feed: io.feed, principal: io.principal() });

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools: Tool[] = agentsOf(io.deps)
      .list(io.principal().tenant)
      .filter((agent) => toolNamePattern.test(agent.name))
      .map((agent) => ({
        name: agent.name,
        title: agent.name,
        description: `Talk to Parley's agent "${agent.name}": one turn of a conversation (a Parley session). Answers the agent's reply and the session_id that continues it.`,
        inputSchema,
        outputSchema,
        execution: { taskSupport: 'optional' },
      }));
    return { tools };
  });

  server.setRequestHandler(
    methodOnly('tools/call'),
    async (raw, extra): Promise<CallToolResult | CreateTaskResult> => {
      const request = parsedRequest(CallToolRequestSchema, raw);
      const principal = io.principal();
      const agent = request.params.name;
      if (!toolNamePattern.test(agent) || !agentsOf(io.deps).get(principal.tenant, agent)) {
        throw new McpError(ErrorCode.InvalidParams, `unknown tool "${agent.slice(0, 128)}"`, {
          error: 'unknown_agent',
        });
      }
      if (request.params.task) {
        // A task: the turn is admitted and the task answered at once (tasks.ts).
        const parsed = callArguments.safeParse(request.params.arguments ?? {});
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          const field = issue?.path.map(String).join('.') || '(arguments)';
          throw new McpError(
            ErrorCode.InvalidParams,
            `invalid_request: ${field}: ${issue?.message ?? 'invalid'}`,
            { error: 'invalid_request', field },
          );
        }
        const key = extra._meta?.[idempotencyMetaKey];
        if (key !== undefined && (typeof key !== 'string' || !clientKeyPattern.test(key))) {
          throw new McpError(
            ErrorCode.InvalidParams,
            `invalid_request: _meta["${idempotencyMetaKey}"]: 1-128 characters of A-Z a-z 0-9 _ -`,
            { error: 'invalid_request', field: `_meta.${idempotencyMetaKey}` },
          );
        }
        return createTask(taskIo(), {
          agent,
          message: parsed.data.message,
          sessionId: parsed.data.session_id ?? null,
          turnId: taskTurnId(principal, agent, key ?? null),
        });
      }
      const progressToken = extra._meta?.progressToken;
      let progress = 0;
      const connection = io.connectionOf(extra.requestId);
      const stopped = linkedSignal(extra.signal, ...(connection ? [connection] : []));
      try {
        const parsed = callArguments.safeParse(request.params.arguments ?? {});
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          const field = issue?.path.map(String).join('.') || '(arguments)';
          throw new ParleyError('invalid_request', `${field}: ${issue?.message ?? 'invalid'}`, {
            field,
          });
        }
        const outcome = await callTurn(
          {
            deps: io.deps,
            feed: io.feed,
            principal,
            signal: stopped.signal,
            cancelledByClient: () => io.cancelledByClient(extra.requestId),
            waitMs: io.deps.config.server.blockingWaitMs,
            progress:
              progressToken === undefined
                ? null
                : (step) =>
                    extra.sendNotification({
                      method: 'notifications/progress',
                      params: { progressToken, progress: ++progress, message: step.message },
                    }),
            elicit: elicitThrough(server, extra, io.deps.config.server.blockingWaitMs, null),
          },
          {
            agent,
            message: parsed.data.message,
            sessionId: parsed.data.session_id ?? null,
            turnId: turnIdFrom(extra._meta?.[idempotencyMetaKey]),
          },
        );
        return resultOf(outcome);
      } catch (error) {
        // Parley's refusals are the tool's errors (a model can read and correct them).
        if (!isParleyError(error)) throw error;
        return {
          isError: true,
          content: [{ type: 'text', text: `${error.code}: ${error.message}` }],
          _meta: { 'parley/error': error.code },
        };
      } finally {
        stopped.dispose();
      }
    },
  );

  server.setRequestHandler(methodOnly('tasks/get'), (raw) =>
    getTask(taskIo(), parsedRequest(GetTaskRequestSchema, raw).params.taskId),
  );
  server.setRequestHandler(methodOnly('tasks/list'), (raw) =>
    listTasks(taskIo(), parsedRequest(ListTasksRequestSchema, raw).params?.cursor),
  );
  server.setRequestHandler(methodOnly('tasks/result'), async (raw, extra) => {
    const request = parsedRequest(GetTaskPayloadRequestSchema, raw);
    const connection = io.connectionOf(extra.requestId);
    const stopped = linkedSignal(extra.signal, ...(connection ? [connection] : []));
    try {
      const { taskId } = request.params;
      const elicit = elicitThrough(server, extra, io.deps.config.server.blockingWaitMs, taskId);
      return await taskResult(taskIo(), taskId, stopped.signal, elicit);
    } finally {
      stopped.dispose();
    }
  });
  server.setRequestHandler(methodOnly('tasks/cancel'), async (raw, extra) => {
    const request = parsedRequest(CancelTaskRequestSchema, raw);
    const connection = io.connectionOf(extra.requestId);
    const stopped = linkedSignal(extra.signal, ...(connection ? [connection] : []));
    try {
      return await cancelTask(taskIo(), request.params.taskId, stopped.signal);
    } finally {
      stopped.dispose();
    }
  });
  return server;
}

/**
 * A request schema that reads only the method: the SDK parses a request with the schema a
 * handler is registered under and answers a mismatch as -32603 (an internal error), so
 * these handlers parse their params themselves (`parsedRequest`).
 */
function methodOnly<M extends string>(method: M) {
  return z.looseObject({ method: z.literal(method) });
}

/** The request as `schema` reads it; malformed params are the JSON-RPC error -32602. */
function parsedRequest<T>(schema: z.ZodType<T>, request: unknown): T {
  const parsed = schema.safeParse(request);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.map(String).join('.') || '(params)';
  throw new McpError(ErrorCode.InvalidParams, `${field}: ${issue?.message ?? 'invalid'}`);
}

/** The turn id: the client's idempotency key when it sends one, else a new one. */
function turnIdFrom(key: unknown): string {
  if (key === undefined) return `mcp_${randomUUID().replaceAll('-', '')}`;
  if (typeof key !== 'string' || !clientKeyPattern.test(key)) {
    throw new ParleyError(
      'invalid_request',
      `_meta["${idempotencyMetaKey}"]: 1-128 characters of A-Z a-z 0-9 _ -`,
      { field: `_meta.${idempotencyMetaKey}` },
    );
  }
  return key;
}
