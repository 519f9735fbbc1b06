import {
  Role,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';

// Messages and replies as the A2A SDK's client builds and reads them (test/a2a*.test.ts).

let counter = 0;

/** A user's text message with a fresh `messageId` (`more` fills in the task or context). */
export function userMessage(text: string, more: Partial<Message> = {}): Message {
  counter += 1;
  return {
    messageId: `test-${Date.now()}-${counter}`,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...more,
  };
}

export function sendRequest(message: Message, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message,
    configuration: {
      acceptedOutputModes: ['text/plain'],
      taskPushNotificationConfig: undefined,
      returnImmediately,
    },
    metadata: undefined,
  };
}

/** A task's reply: the text of its artifacts. */
export function replyOf(task: Task): string {
  return task.artifacts
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .join('');
}

/** Folds a stream's updates into the reply text the way a client does (append, or anew). */
export function streamedReply(events: StreamResponse[]): string {
  let text = '';
  for (const event of events) {
    if (event.payload?.$case === 'task') text = replyOf(event.payload.value);
    if (event.payload?.$case !== 'artifactUpdate') continue;
    const update = event.payload.value;
    const chunk = (update.artifact?.parts ?? [])
      .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
      .join('');
    text = update.append ? text + chunk : chunk;
  }
  return text;
}
