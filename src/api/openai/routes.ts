import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import type { ParleyEvent } from '../../protocol/events.js';
import { findInputRequest } from '../../store/findInputRequest.js';
import { deleteResponse } from '../../store/deleteResponse.js';
import { readPhotoContent } from '../../store/photos.js';
import { findVisibleSession } from '../../store/findVisibleSession.js';
import { routeOptions, typed } from '../contract.js';
import { agentsOf, type ApiDeps } from '../deps.js';
import { JournalFeed } from '../feed.js';
import { JournalFollower } from '../journalFollower.js';
import { AdapterStreams, cancelAsPrincipal, cancelWaitMs } from '../adapterStreams.js';
import { findVisibleTurn, viewerOf } from '../sessionAccess.js';
import { answerForPrincipal } from '../inputs.js';
import { admitForPrincipal } from '../turns.js';
import {
  CompletionChunks,
  chatImages,
  chatToolOutputs,
  completionOf,
  foldChat,
  turnFailed,
} from './chatCompletion.js';
import {
  openaiContracts,
  type approvalResponse,
  type functionCallOutput,
  type responseBody,
} from './contracts.js';
import { isApprovalResponse, isFunctionCallOutput, messageOf, outputText } from './inputItems.js';
import { answerClientToolOutputs, answerUserToolOutputs } from '../clientToolOutputs.js';
import { installOpenaiErrors, openaiErrorBody } from './errors.js';
import { openaiFileRoutes } from './files.js';
import { imagesOf, type StoredImage } from './inputImages.js';
import { turnIdFrom } from './turnId.js';
import {
  ResponseFold,
  responseIdOf,
  turnIdOf,
  type ResponseIdentity,
  type ResponseObject,
  type StreamEvent,
} from './responseFold.js';
import { whenClientGone } from '../clientGone.js';

/**
 * The OpenAI-compatible API (docs/protocols.md): an adapter over Parley's own admission,
 * journal and cancel — the same tenancy and roles, the same durability. A response is one
 * turn (`resp_` + its turn id); its output is folded from the session's journal
 * (responseFold.ts), so a stream resumes exactly from any `sequence_number`.
 */
export async function openaiPlugin(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  installOpenaiErrors(app);
  const feed = new JournalFeed(deps.db, deps.wakeups, deps.config.runtime.pollMs);
  const streams = new AdapterStreams({
    keepaliveMs: deps.config.server.keepaliveMs,
    bufferBytes: deps.config.limits.streamBufferBytes,
  });
  app.addHook('onClose', async () => {
    feed.stop();
    streams.closeAll();
  });
  const api = typed(app);
  const waitMs = deps.config.server.blockingWaitMs;
  const { models, create, get, cancel, chat, remove } = openaiContracts;
  openaiFileRoutes(app, deps);
  const limits = deps.config.limits;
  /** The images a request carries, its files read from the principal's photo library. */
  const imagesFor = (principal: Principal, input: Parameters<typeof imagesOf>[0]) => {
    const stored: StoredImage = (fileId) =>
      readPhotoContent(deps.db, principal.tenant, principal.user, fileId);
    return imagesOf(input, limits.attachmentBytes, limits.remoteImages, stored);
  };

  api.get(models.url, routeOptions(models), async (request) => ({
    object: 'list' as const,
    data: agentsOf(deps)
      .list(request.principal.tenant)
      .map((agent) => ({
        id: agent.name,
        object: 'model' as const,
        created: 0,
        owned_by: 'parley',
      })),
  }));

  api.post(create.url, routeOptions(create), async (request, reply) => {
    const body = request.body;
    const principal = request.principal;
    /** The response as the request asks for it: streamed, at once, or once it settles. */
    const answer = (identity: ResponseIdentity, from: number) =>
      body.stream === true
        ? streamResponse(request, reply, identity, from, -1)
        : foldResponse(
            identity,
            from,
            body.background === true ? 'now' : 'settled',
            request,
            waitMs,
          );
    const answers = Array.isArray(body.input) ? body.input.filter(isApprovalResponse) : [];
    const outputs = Array.isArray(body.input) ? body.input.filter(isFunctionCallOutput) : [];
    if (answers.length > 0 || outputs.length > 0) {
      // Answers and outputs resume the previous response's turn: that response continues.
      const { identity, from } = await answerApprovals(principal, body, answers, outputs);
      return answer(identity, from);
    }
    const agent = agentOfModel(principal, body.model);
    const sessionId = await sessionOf(principal, body);
    const turnId = turnIdFrom(request.headers['idempotency-key']);
    const admission = await admitForPrincipal(deps, principal, {
      turnId,
      sessionId,
      agent,
      message: messageOf(body.input),
      images: await imagesFor(principal, body.input),
      instructions: body.instructions || null,
      metadata: body.metadata && Object.keys(body.metadata).length > 0 ? body.metadata : null,
      clientTools: (body.tools ?? []).map((tool) => ({
        name: tool.name,
        description: tool.description ?? undefined,
        parameters: tool.parameters ?? undefined,
      })),
      clientToolsField: 'tools',
    });
    const identity: ResponseIdentity = {
      turnId: admission.turn_id,
      sessionId: admission.session_id,
      model: body.model,
      createdAt: Math.floor(Date.now() / 1000),
      background: body.background === true,
      instructions: body.instructions || null,
      metadata: body.metadata ?? {},
      previousResponseId: body.previous_response_id ?? null,
    };
    // The admission's own event is where the response's story starts.
    return answer(identity, admission.sequence);
  });

  api.get(get.url, routeOptions(get), async (request, reply) => {
    const { identity, from } = await responseOf(request.principal, request.params.responseId);
    if (request.query.stream === 'true') {
      return streamResponse(request, reply, identity, from, request.query.starting_after ?? -1);
    }
    return foldResponse(identity, from, 'now', request);
  });

  api.post(chat.url, routeOptions(chat), async (request, reply) => {
    const body = request.body;
    const principal = request.principal;
    const outputs = chatToolOutputs(body.messages);
    // Outputs of the client's own tools answer the calls a completion asked for: that
    // turn goes on; else the messages are a new turn.
    const { turnId, sessionId, from } =
      outputs.length > 0
        ? await answerUserToolOutputs(deps, principal, outputs, 'messages')
        : await admitForPrincipal(deps, principal, {
            turnId: turnIdFrom(request.headers['idempotency-key']),
            sessionId: null,
            agent: agentOfModel(principal, body.model),
            message: foldChat(body.messages),
            images: await imagesFor(principal, chatImages(body.messages)),
            clientTools: (body.tools ?? []).map(({ function: tool }) => ({
              name: tool.name,
              description: tool.description ?? undefined,
              parameters: tool.parameters ?? undefined,
            })),
            clientToolsField: 'tools',
          }).then((admission) => ({
            turnId: admission.turn_id,
            sessionId: admission.session_id,
            from: admission.sequence,
          }));
    const created = Math.floor(Date.now() / 1000);
    const identity: ResponseIdentity = {
      turnId,
      sessionId,
      model: body.model,
      createdAt: created,
      background: false,
      instructions: null,
      metadata: {},
      previousResponseId: null,
    };
    const completion = { id: `chatcmpl_${turnId}`, model: body.model, created };
    if (body.stream === true) {
      const chunks = new CompletionChunks(completion);
      const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;
      return streamFold(
        request,
        reply,
        identity,
        from,
        -1,
        (events) => {
          const failed = events.find(
            (event) => event.type === 'response.failed' || event.type === 'response.incomplete',
          );
          const made = chunks.of(events);
          const frames = made.chunks.map(data);
          if (made.toolCalls) return { frames: [...frames, 'data: [DONE]\n\n'], end: true };
          if (made.broken !== null) {
            const error = new ParleyError('reply_withdrawn', made.broken);
            return { frames: [...frames, data(openaiErrorBody(error))], end: true };
          }
          if (failed) {
            const ended = (failed as unknown as { response: ResponseObject }).response;
            return { frames: [...frames, data(openaiErrorBody(turnFailed(ended)))], end: false };
          }
          return { frames, end: false };
        },
        'data: [DONE]\n\n',
      );
    }
    const ended = await foldResponse(identity, from, 'client', request, waitMs);
    const calls = ended.output.some((item) => item.type === 'function_call');
    if (ended.status !== 'completed' && !calls) throw turnFailed(ended);
    return completionOf(completion, ended);
  });

  api.post(cancel.url, routeOptions(cancel), async (request) => {
    const { identity, from } = await responseOf(request.principal, request.params.responseId);
    await cancelAsPrincipal(deps.db, request.principal, identity);
    return foldResponse(identity, from, 'ended', request, cancelWaitMs(waitMs));
  });

  api.delete(remove.url, routeOptions(remove), async (request) => {
    const { identity } = await responseOf(request.principal, request.params.responseId);
    const principal = request.principal;
    await cancelAsPrincipal(deps.db, principal, identity);
    if (!(await deleteResponse(deps.db, principal.tenant, identity.turnId))) {
      throw new ParleyError('turn_not_found', `no response "${request.params.responseId}"`);
    }
    return {
      id: responseIdOf(identity.turnId),
      object: 'response' as const,
      deleted: true as const,
    };
  });

  /**
   * Answers the previous response's approval requests, and its calls of the client's own
   * function tools with their outputs, each as the principal would through Parley's
   * inbox (the same rules: approver roles, escalations, stale answers).
   */
  async function answerApprovals(
    principal: Principal,
    body: z.output<typeof responseBody>,
    answers: z.output<typeof approvalResponse>[],
    outputs: z.output<typeof functionCallOutput>[],
  ): Promise<{ identity: ResponseIdentity; from: number }> {
    if (!body.previous_response_id) {
      throw new ParleyError('invalid_request', 'answers and outputs answer a previous response', {
        field: 'previous_response_id',
      });
    }
    if (answers.length + outputs.length !== (body.input as unknown[]).length) {
      throw new ParleyError('invalid_request', 'answers and outputs come without messages', {
        field: 'input',
      });
    }
    const previous = await responseOf(principal, body.previous_response_id);
    const { sessionId } = previous.identity;
    if (outputs.length > 0) {
      await answerClientToolOutputs(
        deps,
        principal,
        sessionId,
        outputs.map((given) => ({ callId: given.call_id, output: outputText(given.output) })),
        'input',
      );
    }
    for (const answer of answers) {
      const asked = await findInputRequest(
        deps.db,
        principal.tenant,
        sessionId,
        answer.approval_request_id,
      );
      if (!asked) throw new ParleyError('input_not_found', 'no such approval request');
      await answerForPrincipal(deps, principal, {
        sessionId,
        requestId: answer.approval_request_id,
        expectedSequence: asked.expected_sequence,
        approved: answer.approve,
        response: answer.reason ? { reason: answer.reason } : null,
        argumentsDigest: asked.arguments_digest ?? undefined,
      });
    }
    return previous;
  }

  /** `model` names one of the principal's agents. */
  function agentOfModel(principal: Principal, model: string): string {
    const name = model.startsWith('parley/') ? model.slice('parley/'.length) : model;
    if (!agentsOf(deps).get(principal.tenant, name)) {
      throw new ParleyError('unknown_agent', `no agent named "${name}"`, { field: 'model' });
    }
    return name;
  }

  /** The session the response continues: `conversation`, or the previous response's. */
  async function sessionOf(
    principal: Principal,
    body: z.output<typeof responseBody>,
  ): Promise<string | null> {
    const conversation =
      typeof body.conversation === 'string' ? body.conversation : (body.conversation?.id ?? null);
    if (conversation !== null) {
      const visible = await findVisibleSession(
        deps.db,
        principal.tenant,
        conversation,
        viewerOf(deps, principal),
      );
      if (!visible) {
        throw new ParleyError('session_not_found', 'no such conversation', {
          field: 'conversation',
        });
      }
      return conversation;
    }
    if (body.previous_response_id) {
      const { identity } = await responseOf(principal, body.previous_response_id);
      return identity.sessionId;
    }
    return null;
  }

  /** A response by its id: its turn, which the principal may see (else as missing). */
  async function responseOf(
    principal: Principal,
    responseId: string,
  ): Promise<{ identity: ResponseIdentity; from: number }> {
    const turnId = turnIdOf(responseId);
    const found = turnId === null ? null : await findVisibleTurn(deps, principal, turnId);
    if (!found || turnId === null || found.place.response_deleted) {
      throw new ParleyError('turn_not_found', `no response "${responseId}"`);
    }
    const { place, session: visible } = found;
    return {
      identity: {
        turnId,
        sessionId: place.session_id,
        model: visible.agent,
        createdAt: Math.floor(place.created_at.getTime() / 1000),
        background: false,
        instructions: place.instructions,
        metadata: place.metadata ?? {},
        previousResponseId: null,
      },
      from: place.admitted_sequence,
    };
  }

  /**
   * Folds the journal from `from` into the response: `now` as it stands, `settled` once
   * the turn ended or waits for a person, `ended` once it ended, `client` once it ended or
   * waits for its client's own tools (at most `boundMs`).
   */
  async function foldResponse(
    identity: ResponseIdentity,
    from: number,
    until: 'now' | 'settled' | 'ended' | 'client',
    request: FastifyRequest,
    boundMs?: number,
  ) {
    const fold = new ResponseFold(identity);
    const controller = new AbortController();
    const signals = [controller.signal];
    if (boundMs !== undefined) signals.push(AbortSignal.timeout(boundMs));
    const signal = AbortSignal.any(signals);
    const unwatch = whenClientGone(request, () => controller.abort());
    const untrack = streams.track(controller);
    const follower = new JournalFollower(deps.db, feed, identity.sessionId, from);
    const apply = (event: ParleyEvent) => fold.apply(event);
    const done = () =>
      until === 'settled'
        ? fold.settled
        : until === 'client'
          ? fold.ended || fold.callsClient
          : fold.ended;
    try {
      if (until === 'now') await follower.drain(apply);
      else while (!done()) if (!(await follower.take(signal, apply))) break;
    } finally {
      unwatch();
      follower.close();
      untrack();
    }
    return fold.snapshot();
  }

  /** Streams the response's events after `after` until it ends (or the client leaves). */
  function streamResponse(
    request: FastifyRequest,
    reply: FastifyReply,
    identity: ResponseIdentity,
    from: number,
    after: number,
  ): Promise<void> {
    return streamFold(request, reply, identity, from, after, (events) => ({
      frames: events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`),
      end: false,
    }));
  }

  /**
   * Follows the turn's fold from the journal and writes each of its stream events after
   * `after` as the frames `frames` makes of it, until the turn ends or the client leaves;
   * `last` is written at the end of a stream that reached the turn's end.
   */
  async function streamFold(
    request: FastifyRequest,
    reply: FastifyReply,
    identity: ResponseIdentity,
    from: number,
    after: number,
    frames: (events: StreamEvent[]) => { frames: string[]; end: boolean },
    last: string | null = null,
  ): Promise<void> {
    await streams.serve(request, reply, async (stream, signal) => {
      const fold = new ResponseFold(identity);
      const follower = new JournalFollower(deps.db, feed, identity.sessionId, from);
      let sent = after;
      // Each batch: the events folded since the last one (whole commits of the journal).
      const flush = (): boolean => {
        const batch = fold.events.filter((event) => event.sequence_number > sent);
        if (batch.length === 0) return false;
        sent = (batch.at(-1) as StreamEvent).sequence_number;
        const made = frames(batch);
        for (const frame of made.frames) stream.write(frame);
        return made.end;
      };
      try {
        if (flush()) return;
        while (!fold.ended && (await follower.take(signal, (event) => fold.apply(event)))) {
          if (flush()) return;
        }
        if (fold.ended && last !== null) stream.write(last);
      } finally {
        follower.close();
      }
    });
  }
}
