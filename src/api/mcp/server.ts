import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type ElicitRequestFormParams,
  type RequestId,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Principal } from '../../config/types.js';
import { isParleyError, ParleyError } from '../../errors.js';
import { clientKeyPattern } from '../../ids.js';
import type { InputRequiredEvent } from '../../protocol/events.js';
import { agentsOf, type ApiDeps } from '../deps.js';
import type { JournalFeed } from '../feed.js';
import { linkedSignal } from './linkedSignal.js';
import { callTurn, idempotencyMetaKey, type CallOutcome, type Elicited } from './callTurn.js';

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
 * principal's agents, `tools/call` runs a turn of one (callTurn.ts). One server per MCP
 * session; everything durable is in Parley's journal.
 */
export function buildMcpServer(io: McpSessionIo): Server {
  const server = new Server(
    { name: 'parley', version: '1' },
    {
      capabilities: { tools: { listChanged: false } },
      instructions:
        "Each tool is one of Parley's agents: call it with a message; pass the session_id it answers to continue the conversation.",
    },
  );

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
      }));
    return { tools };
  });

  server.setRequestHandler(
    CallToolRequestSchema,
    async (request, extra): Promise<CallToolResult> => {
      const principal = io.principal();
      const agent = request.params.name;
      if (!toolNamePattern.test(agent) || !agentsOf(io.deps).get(principal.tenant, agent)) {
        throw new McpError(ErrorCode.InvalidParams, `unknown tool "${agent.slice(0, 128)}"`, {
          error: 'unknown_agent',
        });
      }
      const capabilities = server.getClientCapabilities();
      const elicitation = capabilities?.elicitation;
      const canElicit =
        elicitation !== undefined &&
        (elicitation.form !== undefined || Object.keys(elicitation).length === 0);
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
            elicit: canElicit
              ? async (asked, signal) => {
                  const answer = await extra.sendRequest(
                    { method: 'elicitation/create', params: formOf(asked) },
                    ElicitResultSchema,
                    { signal, timeout: io.deps.config.server.blockingWaitMs },
                  );
                  return elicitedAnswer(asked, answer.action, answer.content);
                }
              : null,
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
  return server;
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

/** The tool result of a call: the reply as text, and the outcome as structured content. */
function resultOf(outcome: CallOutcome): CallToolResult {
  const text =
    outcome.status === 'completed'
      ? outcome.reply
      : outcome.status === 'input_required'
        ? `The turn waits for a person in Parley's inbox (request ${outcome.request_id ?? ''}); it goes on once answered.`
        : outcome.status === 'in_progress'
          ? `The turn is still running (turn ${outcome.turn_id}); call again with _meta["${idempotencyMetaKey}"] = "${outcome.turn_id}" and the same arguments to follow it.`
          : outcome.status === 'cancelled'
            ? 'The turn was cancelled.'
            : `The turn failed: ${outcome.error?.message ?? 'error'}`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: { ...outcome },
    ...(outcome.status === 'failed' || outcome.status === 'cancelled' ? { isError: true } : {}),
  };
}

/** The form that asks the person: approve a call (yes/no and a reason), or answer a question. */
function formOf(asked: InputRequiredEvent): ElicitRequestFormParams {
  if (asked.kind === 'question') {
    return {
      mode: 'form',
      message: asked.prompt ?? 'The agent asks a question.',
      requestedSchema: {
        type: 'object',
        properties: { answer: { type: 'string', title: 'Answer' } },
        required: ['answer'],
      },
    };
  }
  return {
    mode: 'form',
    message: `Approve ${asked.tool ?? 'the call'} with ${JSON.stringify(asked.arguments ?? {})}?`,
    requestedSchema: {
      type: 'object',
      properties: {
        approve: { type: 'boolean', title: 'Approve' },
        reason: { type: 'string', title: 'Reason' },
      },
      required: ['approve'],
    },
  };
}

/**
 * The answer a form brings back: `accept` answers with its fields, `decline` refuses,
 * `cancel` (dismissed) answers nothing: the request waits in Parley's inbox.
 */
function elicitedAnswer(
  asked: InputRequiredEvent,
  action: 'accept' | 'decline' | 'cancel',
  content: Record<string, unknown> | undefined,
): Elicited {
  if (action === 'cancel') return null;
  if (action === 'decline') return { approved: false, response: null };
  if (asked.kind === 'question') {
    const answer = content?.answer;
    return typeof answer === 'string' ? { approved: true, response: { answer } } : null;
  }
  const reason =
    typeof content?.reason === 'string' && content.reason !== '' ? content.reason : null;
  return {
    approved: content?.approve === true,
    response: reason === null ? null : { reason },
  };
}
