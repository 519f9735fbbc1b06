import type { ChatTransport, UIMessage, UIMessageChunk } from 'ai';
import { newClientKey, ParleyClientError, type ParleyClient } from '../client/index.js';
import { decodeApprovalId, type ApprovalRef } from './approvals.js';
import { ChunkMapper } from './chunks.js';
import { journalStream } from './journalStream.js';

export interface ParleyChatTransportOptions {
  client: ParleyClient;
  /** The Parley session of a `useChat` chat id (default: the chat id is the session id). */
  sessionIdFor?: (chatId: string) => string;
  /** The agent for admissions (default: the session's own). */
  agent?: string;
}

const turnIdPattern = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * A `ChatTransport` for AI SDK UI's `useChat` on Parley's durable turns:
 * - `sendMessages` admits the last user message as a turn whose `turn_id` is the UI
 *   message id (a retried send is the same turn) and streams that turn's journal events
 *   as UI message chunks; when the last message is the assistant's with answered
 *   approvals, it sends those answers (PROTOCOL.md §4) and streams the continuation.
 * - `reconnectToStream` finds the session's running turn and replays it from its first
 *   event (the journal is the resumable stream: no Redis, no resumable-stream).
 * - `stop()` cancels the turn durably (§5), on a resumed stream too; only a stop, not a
 *   stream replaced by a newer request for the same chat, cancels.
 */
export class ParleyChatTransport<
  UI_MESSAGE extends UIMessage = UIMessage,
> implements ChatTransport<UI_MESSAGE> {
  /** A reconnect replays the running turn from its first event. */
  readonly resumeStreamIsReplay = true;
  private readonly client: ParleyClient;
  private readonly sessionIdFor: (chatId: string) => string;
  /** Streams started per chat: an abort followed at once by a newer stream is no stop. */
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
    const generation = this.nextGeneration(options.chatId);
    if (options.trigger === 'regenerate-message') {
      throw new Error(
        'Parley keeps an append-only journal: send a new message instead of regenerating',
      );
    }
    const last = options.messages[options.messages.length - 1];
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
    const admission = await this.client.admitTurn({
      sessionId,
      turnId,
      message: text,
      agent: this.options.agent,
      signal: options.abortSignal,
    });
    if (admission.state === 'stored') {
      // A post by someone whose roles do not trigger the agent: kept, but no reply comes.
      return new ReadableStream<UIMessageChunk>({ start: (controller) => controller.close() });
    }
    return this.stream({
      chatId: options.chatId,
      sessionId,
      after: admission.sequence,
      mapper: new ChunkMapper(turnId, 'new'),
      signal: options.abortSignal,
      generation,
      turnId,
    });
  }

  async reconnectToStream(
    options: Parameters<ChatTransport<UI_MESSAGE>['reconnectToStream']>[0],
  ): Promise<ReadableStream<UIMessageChunk> | null> {
    const sessionId = this.sessionIdFor(options.chatId);
    const generation = this.nextGeneration(options.chatId);
    const signal = options.abortSignal;
    const projection = await this.client.getSession(sessionId, { signal });
    const turnId = projection.current_turn?.turn_id;
    const active = ['queued', 'running', 'input_required'].includes(projection.state);
    if (!turnId || !active) return null;
    const after = await this.admissionSequence(sessionId, turnId, signal);
    if (after === null) return null;
    return this.stream({
      chatId: options.chatId,
      sessionId,
      after,
      mapper: new ChunkMapper(turnId, 'new'),
      signal,
      generation,
      turnId,
      replayUntil: projection.latest_sequence,
    });
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
    const responded: { ref: ApprovalRef; callId: string; approved: boolean; reason?: string }[] =
      [];
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
    const first = responded[0];
    if (!first)
      throw new Error('the last message is the assistant’s, with no answered approval to send');
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
          response: responseOf(answer.ref.kind, answer.approved, answer.reason),
          argumentsDigest: answer.ref.argumentsDigest,
          signal,
        });
      } catch (error) {
        // Answered already (elsewhere, or by an earlier try): the journal has the outcome.
        if (!(error instanceof ParleyClientError && error.code === 'stale_input')) throw error;
      }
      this.answered.add(answer.ref.requestId);
    }
    return this.stream({
      chatId,
      sessionId,
      after,
      mapper,
      signal,
      generation,
      turnId: first.ref.turnId,
    });
  }

  private stream(args: {
    chatId: string;
    sessionId: string;
    after: number;
    mapper: ChunkMapper;
    signal: AbortSignal | undefined;
    generation: number;
    turnId: string;
    replayUntil?: number;
  }): ReadableStream<UIMessageChunk> {
    return journalStream(this.client, {
      ...args,
      onStop: () =>
        this.cancelUnlessReplaced(args.chatId, args.sessionId, args.turnId, args.generation),
    });
  }

  private nextGeneration(chatId: string): number {
    const generation = (this.generations.get(chatId) ?? 0) + 1;
    this.generations.set(chatId, generation);
    return generation;
  }

  /**
   * useChat aborts a stream on stop(), and also when a newer request for the same chat
   * replaces it (a second resumeStream): the latter starts in the same task, so a cancel
   * decided one task later sees it and keeps the turn running.
   */
  private cancelUnlessReplaced(
    chatId: string,
    sessionId: string,
    turnId: string,
    generation: number,
  ): void {
    setTimeout(() => {
      if (this.generations.get(chatId) !== generation) return;
      let commandId = this.cancelIds.get(turnId);
      if (!commandId) {
        commandId = newClientKey('cancel');
        this.cancelIds.set(turnId, commandId);
      }
      this.client.cancelTurn(sessionId, turnId, { commandId }).catch(() => {
        // The cancel is idempotent: a later stop() sends the same command again.
      });
    }, 0);
  }
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
