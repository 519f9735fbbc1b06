import { Role, SendMessageRequest, StreamResponse, TaskState, type Part } from '@a2a-js/sdk';
import { readSse } from '../../src/client/sse.js';
import type { Ledger } from './ledger.js';
import { echoOf, messageFor } from './messages.js';
import { driveSpread, retryPause, type ProtocolClientContext } from './protocolClient.js';
import type { Random } from './random.js';

/**
 * A client of the A2A server under the chaos (docs/protocols.md, "A2A"): plain turns as
 * streamed messages (`SendStreamingMessage`), each in a new context, sent as raw JSON-RPC
 * with the SDK's own codecs. Until the task's first event arrives the request is sent
 * again, unchanged (the same `messageId`, so the same turn), to the next API process;
 * after it (the task is the acknowledgement) a broken stream is followed again from the
 * next API process with `SubscribeToTask`, and a task that ended meanwhile is read with
 * `GetTask`. The client holds the adapter to what it promises: the reply it assembled
 * from the artifact's chunks across every connection (a `task` event replaces it, an
 * update appends or replaces as it says) is the demo model's echo, exactly — a chunk
 * sent twice or lost shows. The turns join the ledger, so the checker holds them to the
 * rest (ended once, the transcript's reply). A third of the tasks are sent with a push
 * config naming the soak's receiver: the checker holds their notifications to the rest.
 */

/** What one connection told about the task, folded across connections. */
interface TaskView {
  taskId: string | null;
  sessionId: string | null;
  text: string;
  state: TaskState | null;
}

const ended = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

export async function runA2aClient(
  context: ProtocolClientContext,
  pushUrl: string | null,
): Promise<void> {
  await driveSpread(context, 'soaka', (random, label) =>
    // A third of the tasks ask for push notifications of their states, to the receiver.
    driveTask(context, random, label, pushUrl !== null && random.chance(1 / 3) ? pushUrl : null),
  );
}

async function driveTask(
  context: ProtocolClientContext,
  random: Random,
  label: string,
  pushUrl: string | null,
): Promise<void> {
  const { ledger, apis } = context;
  const message = messageFor('plain', label, random);
  const push = pushUrl === null ? null : { url: pushUrl, token: `soak-${label}` };
  if (push) ledger.counters.a2aPushTasks += 1;
  const deadline = Date.now() + context.followTimeoutMs;
  const view: TaskView = { taskId: null, sessionId: null, text: '', state: null };
  // Half the clients drop their stream at the first chunk, as a closed tab would.
  let dropAtText = random.chance(0.5);
  ledger.counters.a2aTasks += 1;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    if (attempt > 0) {
      if (view.taskId === null) ledger.counters.admissionRetries += 1;
      else ledger.counters.a2aResubscribes += 1;
      await retryPause(attempt, random);
    }
    const dropped = new AbortController();
    const signal = AbortSignal.any([
      dropped.signal,
      AbortSignal.timeout(Math.max(1, deadline - Date.now())),
    ]);
    const call =
      view.taskId === null
        ? { method: 'SendStreamingMessage', params: sendParams(label, message, push) }
        : { method: 'SubscribeToTask', params: { id: view.taskId } };
    try {
      const response = await fetch(`${apis.pick()}/a2a/default`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: attempt, ...call }),
        signal,
      });
      if (response.status >= 500 || !response.body) {
        apis.failures += 1;
        await response.body?.cancel().catch(() => {});
        continue;
      }
      if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        // A JSON-RPC error: a task that ended before the subscription is read as it stands.
        const error = ((await response.json()) as { error?: { code?: number } }).error;
        if (view.taskId !== null && error?.code === unsupportedOperation) {
          await judgeEnded(context, view, label, message, deadline);
        } else {
          ledger.violation('a2a', `${label}: ${response.status} ${JSON.stringify(error)}`);
        }
        return;
      }
      for await (const frame of readSse(response.body)) {
        if (frame.kind !== 'message' || frame.data === '') continue;
        const answer = JSON.parse(frame.data) as { result?: unknown; error?: unknown };
        if (answer.error !== undefined) {
          ledger.violation('a2a stream', `${label}: ${JSON.stringify(answer.error)}`);
          return;
        }
        const update = StreamResponse.fromJSON(answer.result);
        const first = view.taskId === null;
        if (!apply(view, update)) {
          ledger.violation('a2a stream', `${label}: an update of another task`);
          return;
        }
        if (first && view.taskId !== null && view.sessionId !== null) {
          ledger.acknowledge({
            turnId: view.taskId,
            sessionId: view.sessionId,
            kind: 'plain',
            message,
            sequence: null,
          });
          if (push) {
            const { token } = push;
            ledger.pushes.push({ label, taskId: view.taskId, token, reply: echoOf(message) });
          }
        }
        if (view.state !== null && ended.has(view.state)) {
          judge(ledger, label, message, view);
          return;
        }
        if (dropAtText && update.payload?.$case === 'artifactUpdate') {
          dropAtText = false;
          dropped.abort();
        }
      }
    } catch {
      // No answer, or the stream broke: the next attempt goes to the other API process.
      if (!dropped.signal.aborted) apis.failures += 1;
    }
  }
  if (view.taskId === null) ledger.counters.unacknowledged += 1;
  else ledger.counters.followTimeouts += 1;
}

/** JSON-RPC code of A2A's UnsupportedOperationError (a subscription to an ended task). */
const unsupportedOperation = -32004;

/** Folds one stream update into the view; false when it is about another task. */
function apply(view: TaskView, update: StreamResponse): boolean {
  const payload = update.payload;
  if (!payload) return true;
  if (payload.$case === 'task') {
    const task = payload.value;
    if (view.taskId !== null && task.id !== view.taskId) return false;
    view.taskId = task.id;
    view.sessionId = task.contextId;
    view.text = textOf(task.artifacts.flatMap((artifact) => artifact.parts));
    view.state = task.status?.state ?? null;
    return true;
  }
  if (payload.$case === 'artifactUpdate') {
    if (payload.value.taskId !== view.taskId) return false;
    const text = textOf(payload.value.artifact?.parts ?? []);
    view.text = payload.value.append ? view.text + text : text;
    return true;
  }
  if (payload.$case === 'statusUpdate') {
    if (payload.value.taskId !== view.taskId) return false;
    view.state = payload.value.status?.state ?? view.state;
    return true;
  }
  return true;
}

/** A task that ended before it could be followed again: `GetTask` shows it as it ended. */
async function judgeEnded(
  context: ProtocolClientContext,
  view: TaskView,
  label: string,
  message: string,
  deadline: number,
): Promise<void> {
  const answer = await context.apis.send(
    'POST',
    '/a2a/default',
    { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: view.taskId } },
    { deadline, random: context.random },
  );
  if (!answer) {
    // No answer before the deadline (processes killed and restarting): given up, as any
    // request retried past its time; the drain and the journal's checks still hold the task.
    context.ledger.counters.httpErrors += 1;
    return;
  }
  const result = (answer.body as { result?: unknown } | undefined)?.result;
  if (result === undefined) {
    context.ledger.violation('a2a', `${label}: GetTask answered ${JSON.stringify(answer?.body)}`);
    return;
  }
  apply(view, StreamResponse.fromJSON({ task: result }));
  judge(context.ledger, label, message, view);
}

/** A plain message answered alone completes with the demo model's echo. */
function judge(ledger: Ledger, label: string, message: string, view: TaskView): void {
  if (view.state !== TaskState.TASK_STATE_COMPLETED) {
    ledger.violation(
      'a2a',
      `${label}: ended ${view.state === null ? 'unknown' : TaskState[view.state]}`,
    );
    return;
  }
  if (view.text !== echoOf(message)) {
    ledger.violation('a2a', `${label}: completed with "${view.text.slice(0, 80)}"`);
  }
}

function sendParams(
  label: string,
  message: string,
  push: { url: string; token: string } | null,
): unknown {
  return SendMessageRequest.toJSON({
    tenant: '',
    message: {
      messageId: `soak-${label}`,
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [
        {
          content: { $case: 'text', value: message },
          metadata: undefined,
          filename: '',
          mediaType: 'text/plain',
        },
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: push
      ? {
          acceptedOutputModes: [],
          taskPushNotificationConfig: {
            tenant: '',
            id: '',
            taskId: '',
            url: push.url,
            token: push.token,
            authentication: undefined,
          },
          returnImmediately: false,
        }
      : undefined,
    metadata: undefined,
  });
}

function textOf(parts: Part[]): string {
  return parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
}
