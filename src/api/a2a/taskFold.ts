import {
  Role,
  TaskState,
  type Artifact,
  type Message,
  type Part,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import type { InputRequiredEvent, ParleyEvent } from '../../protocol/events.js';

/**
 * A Parley turn seen as an A2A task (docs/protocols.md, "A2A"): a pure fold over the
 * session's journal from the turn's admission on. The task's id is the turn's, its
 * `contextId` the session's. The reply is one artifact, `reply`, streamed in chunks as the
 * text arrives; an approval or a question the turn waits for is the `input-required`
 * state, with a message naming the request. The same journal prefix always gives the same
 * task and the same update events, so any process can answer for any task.
 */

export interface TaskIdentity {
  taskId: string;
  contextId: string;
}

/** The artifact every task's reply is (one per task). */
export const replyArtifactId = 'reply';

const interrupted = new Set([TaskState.TASK_STATE_INPUT_REQUIRED]);
const terminal = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
]);

export function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: 'text/plain',
  };
}

export function dataPart(data: Record<string, unknown>): Part {
  return {
    content: { $case: 'data', value: data },
    metadata: undefined,
    filename: '',
    mediaType: 'application/json',
  };
}

/** What a pending request is, in words the client (a person, or another agent) can act on. */
export function describeRequest(event: InputRequiredEvent): string {
  switch (event.kind) {
    case 'approval':
      return `Approval needed: the agent wants to call ${event.tool ?? 'a tool'} with ${JSON.stringify(event.arguments ?? {})}. Answer "approve" or "reject" (or a data part {"approved": true|false, "reason"?}).`;
    case 'question':
      return event.prompt ?? 'The agent asks a question: answer it with the next message.';
    case 'budget_extension':
      return `The agent's budget is spent: ${event.prompt ?? 'may it go on?'} Answer "approve" or "reject".`;
    case 'reconciliation':
      return `Did this call of ${event.tool ?? 'a tool'} take effect? Answer "approve" (it did) or "reject" (it did not).`;
    case 'external_auth':
      return `The agent needs access to ${event.provider ?? 'a third party'}${event.url ? ` (${event.url})` : ''}: answer with a data part {"approved": true, "credential_ref": "..."}.`;
    case 'client_tool':
      return `The agent called ${event.tool ?? 'a tool'}, which its client runs: the client that declared it answers with its output.`;
  }
}

/** Builds the task and its stream updates as the journal events arrive. */
export class TaskFold {
  state = TaskState.TASK_STATE_SUBMITTED;
  private timestamp: string | undefined;
  private statusMessage: Message | undefined;
  private readonly history: Message[] = [];
  private reply = '';
  /** A chunk of the current artifact went out: the next one appends to it. */
  private opened = false;
  private lead: string | null = null;
  private attempt = 0;
  /** The turn's requests waiting for an answer, oldest first. */
  readonly pending = new Map<string, InputRequiredEvent>();
  /** The updates a stream sends after the task itself, in journal order. */
  readonly updates: StreamResponse[] = [];

  constructor(private readonly identity: TaskIdentity) {}

  get ended(): boolean {
    return terminal.has(this.state);
  }

  /** Ended, or waiting for an answer: a blocking send answers now. */
  get settled(): boolean {
    return this.ended || interrupted.has(this.state);
  }

  apply(event: ParleyEvent): void {
    if (this.ended) return;
    const { taskId } = this.identity;
    switch (event.type) {
      case 'message':
        if (event.turn_id === taskId && event.message.role === 'user') {
          this.history.push(
            this.message(Role.ROLE_USER, event.message.id, [event.message.content]),
          );
        }
        return;
      case 'turn_started':
        if (!event.turn_ids.includes(taskId)) return;
        this.lead = event.turn_id;
        if (event.attempt !== this.attempt) this.withdraw();
        this.attempt = event.attempt;
        if (this.state === TaskState.TASK_STATE_SUBMITTED) {
          this.setStatus(TaskState.TASK_STATE_WORKING, undefined, event.at);
        }
        return;
      case 'text_delta':
        if (event.turn_id !== this.lead || event.delta === '') return;
        this.chunk(event.delta, false);
        return;
      case 'attempt_reset':
        if (event.turn_id === this.lead) this.withdraw();
        return;
      case 'input_required':
        if (event.turn_id !== this.lead) return;
        this.pending.set(event.request_id, event);
        this.setStatus(
          TaskState.TASK_STATE_INPUT_REQUIRED,
          this.message(Role.ROLE_AGENT, `${taskId}_${event.request_id}`, [describeRequest(event)], {
            request_id: event.request_id,
            kind: event.kind,
            ...(event.tool === undefined ? {} : { tool: event.tool }),
            ...(event.arguments === undefined ? {} : { arguments: event.arguments }),
            ...(event.arguments_digest === undefined
              ? {}
              : { arguments_digest: event.arguments_digest }),
          }),
          event.at,
        );
        return;
      case 'input_resolved':
        if (!this.pending.delete(event.request_id)) return;
        if (this.pending.size === 0) {
          this.setStatus(TaskState.TASK_STATE_WORKING, undefined, event.at);
        }
        return;
      case 'done': {
        if (!event.turn_ids.includes(taskId)) return;
        const text = event.final_message.content;
        // The reply as committed wins over what streamed (a short reply may come whole).
        if (this.opened && text.startsWith(this.reply)) {
          this.chunk(text.slice(this.reply.length), true);
        } else {
          this.opened = false;
          this.reply = '';
          this.chunk(text, true);
        }
        const reply = this.message(Role.ROLE_AGENT, event.final_message.id, [text]);
        this.history.push(reply);
        this.pending.clear();
        this.setStatus(TaskState.TASK_STATE_COMPLETED, reply, event.at);
        return;
      }
      case 'error':
        if (!event.turn_ids.includes(taskId)) return;
        this.setStatus(
          TaskState.TASK_STATE_FAILED,
          this.message(Role.ROLE_AGENT, `${taskId}_error`, [event.message], { code: event.code }),
          event.at,
        );
        return;
      case 'cancelled':
        if (!event.turn_ids.includes(taskId)) return;
        this.setStatus(TaskState.TASK_STATE_CANCELED, undefined, event.at);
        return;
      default:
        return;
    }
  }

  /** The task as it stands. */
  snapshot(): Task {
    return {
      id: this.identity.taskId,
      contextId: this.identity.contextId,
      status: { state: this.state, message: this.statusMessage, timestamp: this.timestamp },
      artifacts: this.opened ? [this.artifact(this.reply)] : [],
      history: [...this.history],
      metadata: undefined,
    };
  }

  private setStatus(state: TaskState, message: Message | undefined, at: string): void {
    this.state = state;
    this.statusMessage = message;
    this.timestamp = at;
    const { taskId, contextId } = this.identity;
    this.updates.push({
      payload: {
        $case: 'statusUpdate',
        value: {
          taskId,
          contextId,
          status: { state, message, timestamp: at },
          metadata: undefined,
        },
      },
    });
  }

  /** A chunk of the reply: appended to what went out, or (first, or after a withdrawal) anew. */
  private chunk(text: string, last: boolean): void {
    const append = this.opened;
    this.reply += text;
    this.opened = true;
    const { taskId, contextId } = this.identity;
    this.updates.push({
      payload: {
        $case: 'artifactUpdate',
        value: {
          taskId,
          contextId,
          artifact: this.artifact(text),
          append,
          lastChunk: last,
          metadata: undefined,
        },
      },
    });
  }

  /** The attempt's text is withdrawn (a retried step): the next chunk replaces the artifact. */
  private withdraw(): void {
    this.opened = false;
    this.reply = '';
  }

  private artifact(text: string): Artifact {
    return {
      artifactId: replyArtifactId,
      name: 'reply',
      description: "the agent's reply",
      parts: [textPart(text)],
      metadata: undefined,
      extensions: [],
    };
  }

  private message(
    role: Role,
    messageId: string,
    texts: string[],
    data?: Record<string, unknown>,
  ): Message {
    return {
      messageId,
      contextId: this.identity.contextId,
      taskId: this.identity.taskId,
      role,
      parts: [...texts.map(textPart), ...(data ? [dataPart(data)] : [])],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
  }
}

/** `historyLength`: at most that many of the latest messages (0: none; absent: all). */
export function trimHistory(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  return { ...task, history: historyLength === 0 ? [] : task.history.slice(-historyLength) };
}
