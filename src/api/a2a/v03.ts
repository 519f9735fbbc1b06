import {
  ListTaskPushNotificationConfigsResponse,
  Role,
  SendMessageResponse,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
  type Artifact,
  type Message,
  type Part,
  type TaskStatus,
} from '@a2a-js/sdk';
import { ParleyError } from '../../errors.js';

/**
 * A2A 0.3 over the 1.0 handlers (docs/protocols.md, "A2A 0.3 clients"): a 0.3 method name
 * (`message/send`, `tasks/get`…: a slash, which no 1.0 name has) is the 1.0 call it maps
 * to, its params rewritten into 1.0's JSON before they are checked, and the answer — a
 * result, each streamed event, a refusal's field — written back in 0.3's terms (`kind`
 * discriminators, lower-case states, `final`, the push config nested in its task). There
 * is one server: routes.ts dispatches the translated call like any other.
 */

/** The 0.3 JSON-RPC methods, by the 1.0 method each is. */
const methods: Record<string, string> = {
  'message/send': 'SendMessage',
  'message/stream': 'SendStreamingMessage',
  'tasks/get': 'GetTask',
  'tasks/cancel': 'CancelTask',
  'tasks/resubscribe': 'SubscribeToTask',
  'tasks/pushNotificationConfig/set': 'CreateTaskPushNotificationConfig',
  'tasks/pushNotificationConfig/get': 'GetTaskPushNotificationConfig',
  'tasks/pushNotificationConfig/list': 'ListTaskPushNotificationConfigs',
  'tasks/pushNotificationConfig/delete': 'DeleteTaskPushNotificationConfig',
  'agent/getAuthenticatedExtendedCard': 'GetExtendedAgentCard',
};

/** The 0.3 method names Parley answers (the fuzzer and the tests use them). */
export const v03Methods = Object.keys(methods);

/** A 0.3 call: 1.0's names have no slash, every 0.3 name has one. */
export function isV03Method(method: string): boolean {
  return method.includes('/');
}

/** `A2A-Version` of 0.3's range ([0.3, 1.0), as the SDK reads it): a 0.3 client. */
export function isV03Version(version: string): boolean {
  const [major, minor] = version.trim().split('.').map(Number);
  return major === 0 && minor !== undefined && minor >= 3;
}

type Json = Record<string, unknown>;

function objectOf(value: unknown): Json | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Json)
    : null;
}

/** Keeps the entries whose value is defined (an absent 0.3 field stays absent in 1.0). */
function defined(entries: Json): Json {
  return Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined));
}

/**
 * A 0.3 call as its 1.0 call: the method's 1.0 name (an unknown 0.3 name stays as it is,
 * and is `method_not_found`), the params in 1.0's JSON. Anything not shaped as 0.3 says is
 * passed on as it is, so 1.0's checks refuse it (params.ts); a part of no known `kind` is
 * refused here. Nothing is read or written before this.
 */
export function callFromV03<T extends { method: string; params?: Json | undefined }>(call: T): T {
  const method = methods[call.method] ?? call.method;
  const params = call.params;
  if (!params) return { ...call, method };
  switch (method) {
    case 'SendMessage':
    case 'SendStreamingMessage':
      return { ...call, method, params: sendFromV03(params) };
    case 'CreateTaskPushNotificationConfig': {
      const { pushNotificationConfig, ...rest } = params;
      return { ...call, method, params: { ...rest, ...pushConfigFromV03(pushNotificationConfig) } };
    }
    case 'GetTaskPushNotificationConfig':
    case 'ListTaskPushNotificationConfigs':
    case 'DeleteTaskPushNotificationConfig': {
      const { id, pushNotificationConfigId, ...rest } = params;
      return {
        ...call,
        method,
        params: { ...rest, ...defined({ taskId: id, id: pushNotificationConfigId }) },
      };
    }
    default:
      // tasks/get, tasks/cancel, tasks/resubscribe: `{id, historyLength?, metadata?}` in both.
      return { ...call, method };
  }
}

function sendFromV03(params: Json): Json {
  const message = objectOf(params.message);
  const configuration = objectOf(params.configuration);
  return {
    ...params,
    ...(message ? { message: messageFromV03(message) } : {}),
    ...(configuration ? { configuration: configurationFromV03(configuration) } : {}),
  };
}

function messageFromV03(message: Json): Json {
  const { kind: _kind, role, parts, ...rest } = message;
  const roles: Record<string, string> = { user: 'ROLE_USER', agent: 'ROLE_AGENT' };
  return {
    ...rest,
    role: typeof role === 'string' ? (roles[role] ?? role) : role,
    parts: Array.isArray(parts) ? parts.map(partFromV03) : parts,
  };
}

function partFromV03(given: unknown, index: number): unknown {
  const part = objectOf(given);
  if (!part) return given;
  const { kind, metadata } = part;
  switch (kind) {
    case 'text':
      return defined({ text: part.text, metadata });
    case 'data':
      return defined({ data: part.data, metadata });
    case 'file': {
      const file = objectOf(part.file) ?? {};
      return defined({
        url: file.uri,
        raw: file.bytes,
        mediaType: file.mimeType,
        filename: file.name,
        metadata,
      });
    }
    default:
      throw new ParleyError('invalid_request', 'a 0.3 part is of kind text, data or file', {
        field: `params.message.parts.${index}.kind`,
      });
  }
}

/** 0.3's `blocking` (absent: blocking, as 1.0's default) and `pushNotificationConfig`. */
function configurationFromV03(configuration: Json): Json {
  const { blocking, pushNotificationConfig, ...rest } = configuration;
  return {
    ...rest,
    // A `blocking` that is not a boolean goes on as it is, for 1.0's check to refuse.
    ...(blocking === undefined
      ? {}
      : { returnImmediately: typeof blocking === 'boolean' ? !blocking : blocking }),
    ...(pushNotificationConfig === undefined
      ? {}
      : { taskPushNotificationConfig: pushConfigFromV03(pushNotificationConfig) }),
  };
}

/** 0.3's `PushNotificationConfig` (`authentication.schemes`, a list: the first is taken). */
function pushConfigFromV03(given: unknown): Json {
  const config = objectOf(given);
  if (!config) return {};
  const { authentication, ...rest } = config;
  const auth = objectOf(authentication);
  if (!auth) return { ...rest, ...defined({ authentication }) };
  const { schemes, ...more } = auth;
  const scheme = Array.isArray(schemes) ? schemes[0] : schemes;
  return { ...rest, authentication: { ...more, ...defined({ scheme }) } };
}

/**
 * A refusal in 0.3's terms: its field (and the message's leading field) named as the 0.3
 * client sent it, the code untouched.
 */
export function refusalInV03(method: string, error: ParleyError): ParleyError {
  const field = error.details.field;
  if (typeof field !== 'string') return error;
  const renamed = v03Field(method, field);
  if (renamed === field) return error;
  const message = error.message.startsWith(`${field}:`)
    ? `${renamed}${error.message.slice(field.length)}`
    : error.message;
  return new ParleyError(error.code, message, { ...error.details, field: renamed });
}

function v03Field(method: string, field: string): string {
  const swap = (from: string, to: string) =>
    field === from || field.startsWith(`${from}.`) ? `${to}${field.slice(from.length)}` : null;
  switch (methods[method]) {
    case 'SendMessage':
    case 'SendStreamingMessage':
      return (
        swap('params.configuration.returnImmediately', 'params.configuration.blocking') ??
        swap(
          'params.configuration.taskPushNotificationConfig',
          'params.configuration.pushNotificationConfig',
        ) ??
        field
      );
    case 'CreateTaskPushNotificationConfig':
      return field === 'params.taskId' || field === 'params'
        ? field
        : field.replace(/^params\./, 'params.pushNotificationConfig.');
    case 'GetTaskPushNotificationConfig':
    case 'ListTaskPushNotificationConfigs':
    case 'DeleteTaskPushNotificationConfig':
      return (
        swap('params.taskId', 'params.id') ??
        swap('params.id', 'params.pushNotificationConfigId') ??
        field
      );
    default:
      return field;
  }
}

/** A 1.0 method's result (its JSON) as the 0.3 method answers it. */
export function resultInV03(method: string, value: unknown): unknown {
  switch (method) {
    case 'SendMessage': {
      const payload = SendMessageResponse.fromJSON(value).payload;
      if (payload?.$case === 'message') return messageInV03(payload.value);
      return payload ? taskInV03(payload.value) : null;
    }
    case 'GetTask':
    case 'CancelTask':
      return taskInV03(Task.fromJSON(value));
    case 'CreateTaskPushNotificationConfig':
    case 'GetTaskPushNotificationConfig':
      return pushConfigInV03(TaskPushNotificationConfig.fromJSON(value));
    case 'ListTaskPushNotificationConfigs':
      return ListTaskPushNotificationConfigsResponse.fromJSON(value).configs.map(pushConfigInV03);
    default:
      return value;
  }
}

/**
 * A streamed event as 0.3 streams it. `final` marks the status update the
 * stream ends after: an ended task's, or — on a send's stream, which stops there — the
 * input request's.
 */
export function streamedInV03(value: StreamResponse, endsAtInput: boolean): unknown {
  const payload = value.payload;
  switch (payload?.$case) {
    case 'task':
      return taskInV03(payload.value);
    case 'message':
      return messageInV03(payload.value);
    case 'statusUpdate': {
      const event = payload.value;
      const status = statusInV03(event.status);
      const final =
        ['completed', 'failed', 'canceled', 'rejected'].includes(status.state) ||
        (endsAtInput && status.state === 'input-required');
      return defined({
        kind: 'status-update',
        taskId: event.taskId,
        contextId: event.contextId,
        status,
        final,
        metadata: event.metadata,
      });
    }
    case 'artifactUpdate': {
      const event = payload.value;
      return defined({
        kind: 'artifact-update',
        taskId: event.taskId,
        contextId: event.contextId,
        artifact: event.artifact ? artifactInV03(event.artifact) : undefined,
        append: event.append,
        lastChunk: event.lastChunk,
        metadata: event.metadata,
      });
    }
    default:
      return StreamResponse.toJSON(value);
  }
}

function taskInV03(task: Task): Json {
  return defined({
    kind: 'task',
    id: task.id,
    contextId: task.contextId,
    status: statusInV03(task.status),
    artifacts: task.artifacts.length > 0 ? task.artifacts.map(artifactInV03) : undefined,
    history: task.history.length > 0 ? task.history.map(messageInV03) : undefined,
    metadata: task.metadata,
  });
}

/** `TASK_STATE_INPUT_REQUIRED` is `input-required`; an unspecified state `unknown`. */
function statusInV03(status: TaskStatus | undefined): Json & { state: string } {
  const name = TaskState[status?.state ?? TaskState.TASK_STATE_UNSPECIFIED] ?? '';
  const state = name
    .replace(/^TASK_STATE_/, '')
    .toLowerCase()
    .replace(/_/g, '-');
  return {
    state: state === 'unspecified' || state === '' ? 'unknown' : state,
    ...defined({
      message: status?.message ? messageInV03(status.message) : undefined,
      timestamp: status?.timestamp || undefined,
    }),
  };
}

function messageInV03(message: Message): Json {
  return defined({
    kind: 'message',
    messageId: message.messageId,
    role: message.role === Role.ROLE_USER ? 'user' : 'agent',
    parts: message.parts.map(partInV03),
    contextId: message.contextId || undefined,
    taskId: message.taskId || undefined,
    metadata: message.metadata,
  });
}

function artifactInV03(artifact: Artifact): Json {
  return defined({
    artifactId: artifact.artifactId,
    name: artifact.name || undefined,
    description: artifact.description || undefined,
    parts: artifact.parts.map(partInV03),
    metadata: artifact.metadata,
  });
}

/** A data part that is not an object is wrapped as `{value}`, as the SDK's 0.3 layer does. */
function partInV03(part: Part): Json {
  const content = part.content;
  const metadata = part.metadata;
  switch (content?.$case) {
    case 'data': {
      const data = objectOf(content.value);
      return data
        ? defined({ kind: 'data', data, metadata })
        : {
            kind: 'data',
            data: { value: content.value },
            metadata: { ...metadata, data_part_compat: true },
          };
    }
    case 'url':
    case 'raw': {
      const file =
        content.$case === 'url'
          ? { uri: content.value }
          : { bytes: Buffer.from(content.value).toString('base64') };
      const named = defined({
        mimeType: part.mediaType || undefined,
        name: part.filename || undefined,
      });
      return defined({ kind: 'file', file: { ...file, ...named }, metadata });
    }
    default:
      return defined({ kind: 'text', text: content?.value ?? '', metadata });
  }
}

function pushConfigInV03(config: TaskPushNotificationConfig): Json {
  const authentication = config.authentication;
  return {
    taskId: config.taskId,
    pushNotificationConfig: defined({
      id: config.id || undefined,
      url: config.url,
      token: config.token || undefined,
      authentication: authentication
        ? defined({
            schemes: authentication.scheme ? [authentication.scheme] : [],
            credentials: authentication.credentials || undefined,
          })
        : undefined,
    }),
  };
}
