import type { ChatTransport, UIMessage, UIMessageChunk } from 'ai';
import {
  newClientKey,
  ParleyClientError,
  type ClientToolDeclaration,
  type ParleyClient,
} from '../client/index.js';
import { clientToolAnswers, type ClientToolAnswer } from './clientTools.js';
import { decodeApprovalId, type ApprovalRef } from './approvals.js';
import { ChunkMapper } from './chunks.js';
import { journalStream, type BurstStart } from './journalStream.js';

export interface ParleyChatTransportOptions {
  client: ParleyClient;
  /** The Parley session of a `useChat` chat id (default: the chat id is the session id). */
  sessionIdFor?: (chatId: string) => string;
  /** The agent for admissions (default: the session's own). */
  agent?: string;
  /**
   * Tools the app runs itself, declared with every message (PROTOCOL.md §2
   * `client_tools`): the model may call them; useChat's `onToolCall` sees the call, and
   * `addToolOutput` sends its output back (the turn goes on).
   */
  clientTools?: ClientToolDeclaration[];
}

const turnIdPattern = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * A `ChatTransport` for AI SDK UI's `useChat` on Parley's durable turns:
 * - `sendMessages` admits the last user message as a turn whose `turn_id` is the UI
 *   message id (a retried send is the same turn) and streams that turn's journal events
 *   as UI message chunks; when the last message is the assistant's with answered
 *   approvals, or outputs of the app's own tools (`clientTools`), it sends those answers
 *   (PROTOCOL.md §4) and streams the continuation.
 * - `reconnectToStream` finds the session's running turn and replays it from its first
 *   event (the journal is the resumable stream: no Redis, no resumable-stream).
 * - `stop()` cancels the turn durably (§5) whenever it comes: while the admission is in
 *   flight, while a resume looks the turn up, while the reply streams; only a stop, not a
 *   stream replaced by a newer request for the same chat, cancels.
 * - A turn folded into another turn's burst streams that burst's one reply,
 *   `reply_<lead>`, as a reload shows it.
 * - `regenerate()` is refused (the journal is append-only): AbstractChat drops the reply
 *   before it asks the transport, so the refusal streams that reply back from the journal,
 *   then an error.
 */
export class ParleyChatTransport<
  UI_MESSAGE extends UIMessage = UIMessage,
> implements ChatTransport<UI_MESSAGE> {
  /** A reconnect replays the running turn from its first event. */
  readonly resumeStreamIsReplay = true;
  private readonly client: ParleyClient;
  private readonly sessionIdFor: (chatId: string) => string;
  /**
   * Resumes started per chat: an abort followed at once by a resume is no stop. A send is
   * never such a replacement: a stop() followed at once by a new message still cancels.
   */
  private readonly generations = new Map<string, number>();
  /** Answers already sent, so a repeated request does not answer twice. */
  private readonly answered = new Set<string>();
  /** One cancel command id per turn: a repeated stop is the same command. */
  private readonly cancelIds = new Map<string, string>();

  constructor(private readonly options: ParleyChatTransportOptions) {
    this.client = options.client;
    this.sessionIdFor = options.sessionIdFor ?? ((chatId) => chatId);
  }

  async sendMessages(
    options: Parameters<ChatTransport<UI_MESSAGE>['sendMessages']>[0],
  ): Promise<ReadableStream<UIMessageChunk>> {
    const sessionId = this.sessionIdFor(options.chatId);
    const generation = this.generations.get(options.chatId) ?? 0;
    const last = options.messages[options.messages.length - 1];
    if (options.trigger === 'regenerate-message') {
      return this.refuseRegenerate(sessionId, last, options.abortSignal);
    }
    if (!last) throw new Error('there is no message to send');
    if (last.role === 'assistant') {
      return this.continueAfterAnswers(
        options.chatId,
        sessionId,
        last,
        options.abortSignal,
        generation,
      );
    }
    const turnId = toTurnId(last.id);
    const text = last.parts
      .filter((part): part is { type: 'text'; text: string } => part.type === 'text')
      .map((part) => part.text)
      .join('\n');
    if (options.abortSignal?.aborted) throw abortError();
    // The POST is not aborted by stop(): whether it landed decides whether the turn needs
    // a cancel, and only its answer tells. stop() ends this call at once all the same.
    const admitting = this.client.admitTurn({
      sessionId,
      turnId,
      message: text,
      agent: this.options.agent,
      clientTools: this.options.clientTools,
    });
    const stop = this.cancelOnStop({
      chatId: options.chatId,
      sessionId,
      generation,
      signal: options.abortSignal,
      turn: Promise.resolve(turnId),
      admitted: admitting.then(
        (admission) => admission.state === 'accepted',
        // Refused (4xx): nothing was admitted. No answer: it may have landed.
        (error: unknown) => !(error instanceof ParleyClientError && isRefusal(error)),
      ),
    });
    const admission = await untilAborted(admitting, options.abortSignal);
    if (admission.state === 'stored') {
      // A post by someone whose roles do not trigger the agent: kept, but no reply comes.
      stop.ended();
      return new ReadableStream<UIMessageChunk>({ start: (controller) => controller.close() });
    }
    return this.stream({
      sessionId,
      after: admission.sequence,
      mapper: new ChunkMapper(turnId, 'new'),
      signal: options.abortSignal,
      onEnd: stop.ended,
    });
  }

  async reconnectToStream(
    options: Parameters<ChatTransport<UI_MESSAGE>['reconnectToStream']>[0],
  ): Promise<ReadableStream<UIMessageChunk> | null> {
    const sessionId = this.sessionIdFor(options.chatId);
    const generation = this.nextGeneration(options.chatId);
    const signal = options.abortSignal;
    // Not aborted by stop() either: a stop during the look-up cancels the turn it finds.
    const lookup = this.findRunningTurn(sessionId);
    const stop = this.cancelOnStop({
      chatId: options.chatId,
      sessionId,
      generation,
      signal,
      turn: lookup.then(
        (found) => found?.turnId ?? null,
        () => null,
      ),
    });
    const found = await untilAborted(lookup, signal);
    if (!found) {
      stop.ended();
      return null;
    }
    return this.stream({
      sessionId,
      after: found.after,
      mapper: new ChunkMapper(found.turnId, 'new'),
      signal,
      onEnd: stop.ended,
      replayUntil: found.replayUntil,
    });
  }

  /** The session's running turn, where its burst begins, and how far the journal is. */
  private async findRunningTurn(
    sessionId: string,
  ): Promise<{ turnId: string; after: number; replayUntil: number } | null> {
    const projection = await this.client.getSession(sessionId);
    const turnId = projection.current_turn?.turn_id;
    const active = ['queued', 'running', 'input_required'].includes(projection.state);
    if (!turnId || !active) return null;
    const after = await this.admissionSequence(sessionId, turnId, undefined);
    if (after === null) return null;
    return { turnId, after, replayUntil: projection.latest_sequence };
  }

  /**
   * Where the burst a turn belongs to begins (its admission), with the journal up to now
   * as history: what a stream needs to show that burst whole.
   */
  private async burstOf(
    sessionId: string,
    turnId: string,
    signal: AbortSignal | undefined,
  ): Promise<BurstStart | null> {
    const projection = await this.client.getSession(sessionId, { signal });
    const after = await this.admissionSequence(sessionId, turnId, signal);
    if (after === null) return null;
    return { after, replayUntil: projection.latest_sequence };
  }

  /**
   * AbstractChat.regenerate() drops the reply before it calls the transport, and Parley
   * cannot answer a message again (the journal is append-only; a rewind keeps the old
   * reply in the transcript). The refusal therefore puts the reply back as the journal
   * has it, the message a reload shows, and ends with an error saying why.
   */
  private async refuseRegenerate(
    sessionId: string,
    last: UI_MESSAGE | undefined,
    signal: AbortSignal | undefined,
  ): Promise<ReadableStream<UIMessageChunk>> {
    const refusal: UIMessageChunk = {
      type: 'error',
      errorText: 'Parley keeps an append-only journal: send a new message instead of regenerating',
    };
    const turnId = last?.role === 'user' ? toTurnId(last.id) : null;
    const burst = turnId === null ? null : await this.burstOf(sessionId, turnId, signal);
    if (turnId === null || burst === null) {
      return new ReadableStream<UIMessageChunk>({
        start: (controller) => {
          controller.enqueue(refusal);
          controller.close();
        },
      });
    }
    const reply = this.stream({
      sessionId,
      ...burst,
      mapper: new ChunkMapper(turnId, 'new'),
      signal,
      onEnd: () => undefined,
    });
    return reply.pipeThrough(
      new TransformStream<UIMessageChunk, UIMessageChunk>({
        flush: (controller) => controller.enqueue(refusal),
      }),
    );
  }

  /** The journal sequence of the turn's user message: its reply's events all follow it. */
  private async admissionSequence(
    sessionId: string,
    turnId: string,
    signal: AbortSignal | undefined,
  ): Promise<number | null> {
    let before: string | null = null;
    for (let page = 0; page < 20; page++) {
      const found = await this.client.listMessages(sessionId, { before, limit: 50, signal });
      const message = found.items.find((item) => item.turn_id === turnId && item.role === 'user');
      if (message) return message.sequence;
      if (!found.next_cursor) return null;
      before = found.next_cursor;
    }
    return null;
  }

  private async continueAfterAnswers(
    chatId: string,
    sessionId: string,
    message: UI_MESSAGE,
    signal: AbortSignal | undefined,
    generation: number,
  ): Promise<ReadableStream<UIMessageChunk>> {
    const responded: (ClientToolAnswer | Omit<ClientToolAnswer, 'output'>)[] = [];
    for (const part of message.parts) {
      const tool = part as {
        state?: string;
        toolCallId?: string;
        approval?: { id: string; approved?: boolean; reason?: string };
      };
      if (tool.state !== 'approval-responded' || !tool.approval || !tool.toolCallId) continue;
      const ref = decodeApprovalId(tool.approval.id);
      if (!ref) continue;
      responded.push({
        ref,
        callId: tool.toolCallId,
        approved: tool.approval.approved === true,
        reason: tool.approval.reason,
      });
    }
    if (this.options.clientTools?.length) {
      responded.push(...(await clientToolAnswers(this.client, sessionId, message, signal)));
    }
    const first = responded[0];
    if (!first)
      throw new Error('the last message is the assistant’s, with no answered approval to send');
    const stop = this.cancelOnStop({
      chatId,
      sessionId,
      generation,
      signal,
      turn: Promise.resolve(first.ref.turnId),
    });
    const mapper = new ChunkMapper(first.ref.turnId, 'continue');
    let after = Number.POSITIVE_INFINITY;
    for (const answer of responded) {
      mapper.knownCall(answer.ref.requestId, answer.callId);
      after = Math.min(after, answer.ref.expectedSequence);
      if (this.answered.has(answer.ref.requestId)) continue;
      try {
        await this.client.answerInput(sessionId, answer.ref.requestId, {
          expectedSequence: answer.ref.expectedSequence,
          approved: answer.approved,
          response:
            'output' in answer
              ? { output: answer.output ?? null }
              : responseOf(answer.ref.kind, answer.approved, answer.reason),
          argumentsDigest: answer.ref.argumentsDigest,
          signal,
        });
      } catch (error) {
        // Answered already (elsewhere, or by an earlier try): the journal has the outcome.
        if (!(error instanceof ParleyClientError && error.code === 'stale_input')) throw error;
      }
      this.answered.add(answer.ref.requestId);
    }
    return this.stream({ sessionId, after, mapper, signal, onEnd: stop.ended });
  }

  private stream(args: {
    sessionId: string;
    after: number;
    mapper: ChunkMapper;
    signal: AbortSignal | undefined;
    onEnd: () => void;
    replayUntil?: number | undefined;
  }): ReadableStream<UIMessageChunk> {
    return journalStream(this.client, {
      ...args,
      findBurst: (lead) => this.burstOf(args.sessionId, lead, undefined),
    });
  }

  private nextGeneration(chatId: string): number {
    const generation = (this.generations.get(chatId) ?? 0) + 1;
    this.generations.set(chatId, generation);
    return generation;
  }

  /**
   * Cancels the request's turn when its signal aborts for a stop, from the moment the
   * request began until its stream ends (`ended`): `turn` is the turn the request started
   * or is about to start (null: none). useChat aborts a request on stop(), and also when
   * a resume for the same chat replaces it: the resume starts in the same task, so a
   * cancel decided one task later sees it and keeps the turn running.
   *
   * The cancel goes out at once. A turn whose admission has not landed yet answers
   * `404 turn_not_found`; the cancel is then sent again once `admitted` says it landed.
   */
  private cancelOnStop(request: {
    chatId: string;
    sessionId: string;
    generation: number;
    signal: AbortSignal | undefined;
    turn: Promise<string | null>;
    admitted?: Promise<boolean>;
  }): { ended: () => void } {
    const { signal } = request;
    let ended = false;
    const onAbort = () => {
      setTimeout(() => {
        if (ended || (this.generations.get(request.chatId) ?? 0) !== request.generation) return;
        void request.turn.then((turnId) => {
          if (turnId !== null) void this.cancel(request.sessionId, turnId, request.admitted);
        });
      }, 0);
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    return {
      ended: () => {
        ended = true;
        signal?.removeEventListener('abort', onAbort);
      },
    };
  }

  private async cancel(
    sessionId: string,
    turnId: string,
    admitted: Promise<boolean> | undefined,
  ): Promise<void> {
    let commandId = this.cancelIds.get(turnId);
    if (!commandId) {
      commandId = newClientKey('cancel');
      this.cancelIds.set(turnId, commandId);
    }
    try {
      await this.client.cancelTurn(sessionId, turnId, { commandId });
      return;
    } catch (error) {
      // The cancel is idempotent: a later stop() sends the same command again.
      const unknownYet = error instanceof ParleyClientError && error.code === 'turn_not_found';
      if (!unknownYet || !admitted) return;
    }
    if (!(await admitted)) return;
    await this.client.cancelTurn(sessionId, turnId, { commandId }).catch(() => undefined);
  }
}

/** Rejects with an AbortError as soon as `signal` aborts; `work` itself goes on. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError());
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    void work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function abortError(): Error {
  const error = new Error('the request was stopped');
  error.name = 'AbortError';
  return error;
}

/** The server answered and refused the admission: nothing was written. */
function isRefusal(error: ParleyClientError): boolean {
  return error.status >= 400 && error.status < 500;
}

function responseOf(
  kind: ApprovalRef['kind'],
  approved: boolean,
  reason: string | undefined,
): Record<string, unknown> | undefined {
  // A question's answer travels in the approval's reason (the AI SDK has no other field).
  if (kind === 'question') return approved ? { answer: reason ?? '' } : undefined;
  return reason ? { reason } : undefined;
}

/** UI message ids become turn ids; one that the protocol would refuse is mapped stably. */
export function toTurnId(messageId: string): string {
  if (turnIdPattern.test(messageId)) return messageId;
  let hash = 0;
  for (const char of messageId) hash = (Math.imul(hash, 31) + char.charCodeAt(0)) >>> 0;
  const safe = messageId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 100);
  return `${safe}_${hash.toString(36)}`;
}
