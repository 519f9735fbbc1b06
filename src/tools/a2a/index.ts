import { createHash } from 'node:crypto';
import { Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { requireScope, ToolError, type CallScope, type Tool, type ToolContext } from '../types.js';

/**
 * The `a2a` tool kind (docs/tools.md, "A2A agents"): an agent's tool entry
 * `NAME: {a2a: CARD_URL, headers?, api_key_env?, description?}` is a tool that sends the
 * model's message to a remote A2A agent with `@a2a-js/sdk`'s client and returns its reply.
 *
 * Durability: the message is sent non-blocking (`returnImmediately`); the remote task's
 * id it answers with is recorded in the call's receipt before the task is followed, so a
 * run of the call after a crash follows that task by id (`GetTask`) and never sends the
 * message again. Only a crash between the remote's accepting the message and the receipt's
 * save (one round trip) leaves no receipt: the call then sends again with the same
 * `messageId`, derived from Parley's tool call (tenant, session, call id); a remote that
 * dedupes message ids (Parley's A2A server does: the id is the turn's idempotency key)
 * answers with the task it already has instead of starting another.
 */

/** The kind's name in the registry; an entry of any name with an `a2a` key is one. */
export const a2aTool = 'a2a';

export interface A2aOptions {
  kind: 'a2a';
  /** The remote agent's card (`…/.well-known/agent-card.json`). */
  card: string;
  headers: Record<string, string>;
  /** The server's environment variable holding the remote's key (sent as a bearer token). */
  apiKeyEnv: string | null;
  description: string | null;
}

export function isA2aOptions(options: unknown): options is A2aOptions {
  return (options as { kind?: unknown } | null)?.kind === 'a2a';
}

/** Checks an entry's own keys; throws a message naming the key. */
export function compileA2aOptions(raw: Record<string, unknown>): A2aOptions {
  const { a2a, headers, api_key_env: apiKeyEnv, description, ...rest } = raw;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) {
    throw new Error(`${unknown}: unknown key (a2a, headers, api_key_env, description)`);
  }
  if (typeof a2a !== 'string' || !/^https?:\/\/[^\s]+$/.test(a2a) || !URL.canParse(a2a)) {
    throw new Error("a2a: must be the http(s) URL of the remote agent's card");
  }
  const compiledHeaders: Record<string, string> = {};
  if (headers !== undefined) {
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
      throw new Error('headers: must be a table of header names to strings');
    }
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== 'string' || !/^[A-Za-z0-9-]+$/.test(name)) {
        throw new Error(`headers.${name}: must be a string under a header name`);
      }
      compiledHeaders[name.toLowerCase()] = value;
    }
  }
  if (
    apiKeyEnv !== undefined &&
    (typeof apiKeyEnv !== 'string' || !/^[A-Z_][A-Z0-9_]*$/.test(apiKeyEnv))
  ) {
    throw new Error('api_key_env: must be the name of an environment variable (A-Z 0-9 _)');
  }
  if (description !== undefined && (typeof description !== 'string' || description.length > 1000)) {
    throw new Error('description: must be a string of at most 1000 characters');
  }
  return {
    kind: 'a2a',
    card: a2a,
    headers: compiledHeaders,
    apiKeyEnv: apiKeyEnv ?? null,
    description: description ?? null,
  };
}

/** The `messageId` of a call: the same for every run of the same call, unique otherwise. */
export function messageIdOf(scope: CallScope): string {
  const digest = createHash('sha256')
    .update(`${scope.tenant}\n${scope.sessionId}\n${scope.callId}`)
    .digest('hex');
  return `parley-${digest.slice(0, 40)}`;
}

/** The tool an agent's entry `name` is: the kind's, under the entry's name. */
export function a2aToolNamed(kind: Tool, name: string, options: A2aOptions): Tool {
  return {
    ...kind,
    name,
    description:
      options.description ??
      `Sends a message to the remote agent "${name}" (A2A) and returns its reply.`,
  };
}

interface A2aArguments {
  message: string;
  context_id?: string;
  task_id?: string;
}

/** The kind: `env` is the server's environment, where `api_key_env` is read. */
export function createA2a(env: Record<string, string | undefined> = {}): Tool {
  return {
    name: a2aTool,
    description: 'Sends a message to a remote A2A agent and returns its reply.',
    inputSchema: {
      type: 'object',
      properties: {
        message: { type: 'string', minLength: 1, description: 'what to tell the remote agent' },
        context_id: {
          type: 'string',
          description: "the remote conversation to continue (a previous result's context_id)",
        },
        task_id: {
          type: 'string',
          description:
            "the remote task waiting for input that this message answers (a previous result's task_id)",
        },
      },
      required: ['message'],
      additionalProperties: false,
    },
    defaultPolicy: 'approve',
    defaultTimeoutMs: 120_000,
    compileOptions: compileA2aOptions,
    execute: (args, context) => call(args as A2aArguments, context, env),
    // It runs again: it follows the recorded task, or sends the same messageId again.
    reconcile: () => Promise.resolve('not_done'),
  };
}

async function call(
  args: A2aArguments,
  context: ToolContext,
  env: Record<string, string | undefined>,
): Promise<Record<string, unknown>> {
  const options = context.options;
  if (!isA2aOptions(options)) throw new ToolError('tool_failed', 'no remote agent configured');
  const scope = requireScope('a2a', context);
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKeyEnv !== null) {
    const key = env[options.apiKeyEnv];
    if (!key) throw new ToolError('unavailable', `${options.apiKeyEnv} is not set on the server`);
    headers.authorization = `Bearer ${key}`;
  }
  const fetchImpl: typeof fetch = (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    return fetch(input, { ...init, headers: merged, signal: context.signal });
  };
  try {
    const resolver = new DefaultAgentCardResolver({ fetchImpl });
    const card = await resolver.resolve(options.card, '');
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl })],
      }),
    );
    const client = await factory.createFromAgentCard(card);
    const recorded = recordedTask(scope);
    let answer: Message | Task = recorded
      ? await client.getTask({ tenant: '', id: recorded }, { signal: context.signal })
      : await client.sendMessage(
          {
            tenant: '',
            message: {
              messageId: messageIdOf(scope),
              contextId: args.context_id ?? '',
              taskId: args.task_id ?? '',
              role: Role.ROLE_USER,
              parts: [textPart(args.message)],
              metadata: undefined,
              extensions: [],
              referenceTaskIds: [],
            },
            configuration: {
              acceptedOutputModes: ['text/plain'],
              taskPushNotificationConfig: undefined,
              returnImmediately: true,
            },
            metadata: undefined,
          },
          { signal: context.signal },
        );
    if (isTask(answer) && !recorded) {
      await scope.receipt?.record({ task_id: answer.id, context_id: answer.contextId });
    }
    // The task is followed until it ends or waits for input: 100 ms, doubling up to 1 s.
    for (let wait = 100; isTask(answer) && !settled(answer); wait = Math.min(wait * 2, 1000)) {
      await delay(wait, context.signal);
      answer = await client.getTask({ tenant: '', id: answer.id }, { signal: context.signal });
    }
    return resultOf(answer);
  } catch (error) {
    if (error instanceof ToolError || context.signal.aborted) throw error;
    throw new ToolError(
      'tool_failed',
      `the remote agent failed: ${(error as Error).message}`.slice(0, 500),
    );
  }
}

/** The remote task an earlier run of this call started, from the call's receipt. */
function recordedTask(scope: CallScope): string | null {
  const taskId = scope.receipt?.value?.task_id;
  return typeof taskId === 'string' && taskId !== '' ? taskId : null;
}

function isTask(answer: Message | Task): answer is Task {
  return 'status' in answer;
}

function settled(task: Task): boolean {
  const state = task.status?.state;
  return (
    state === TaskState.TASK_STATE_COMPLETED ||
    state === TaskState.TASK_STATE_FAILED ||
    state === TaskState.TASK_STATE_CANCELED ||
    state === TaskState.TASK_STATE_REJECTED ||
    state === TaskState.TASK_STATE_INPUT_REQUIRED ||
    state === TaskState.TASK_STATE_AUTH_REQUIRED
  );
}

const stateNames: Partial<Record<TaskState, string>> = {
  [TaskState.TASK_STATE_COMPLETED]: 'completed',
  [TaskState.TASK_STATE_FAILED]: 'failed',
  [TaskState.TASK_STATE_CANCELED]: 'canceled',
  [TaskState.TASK_STATE_REJECTED]: 'rejected',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'input-required',
  [TaskState.TASK_STATE_AUTH_REQUIRED]: 'auth-required',
};

/**
 * What the model reads: the reply, or — the remote waits for input — what it asks, with
 * the ids to answer it by calling the tool again with `task_id`.
 */
function resultOf(answer: Message | Task): Record<string, unknown> {
  if (!isTask(answer)) {
    return { state: 'completed', context_id: answer.contextId, reply: textOf(answer.parts) };
  }
  const state = stateNames[answer.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED] ?? 'unknown';
  const status = textOf(answer.status?.message?.parts ?? []);
  const reply = textOf(answer.artifacts.flatMap((artifact) => artifact.parts)) || status;
  const base = { state, task_id: answer.id, context_id: answer.contextId };
  if (state === 'input-required' || state === 'auth-required') {
    return {
      ...base,
      needs_input: status,
      note: 'The remote agent waits for input: call this tool again with task_id and the answer as message.',
    };
  }
  return { ...base, reply };
}

function textOf(parts: Part[]): string {
  return parts
    .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
    .filter((text) => text !== '')
    .join('\n\n');
}

function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: 'text/plain',
  };
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}
