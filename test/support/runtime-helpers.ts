import type { Tool } from '../../src/tools/types.js';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import type { Config } from '../../src/config/types.js';
import { createLogger } from '../../src/log.js';
import { builtInTools } from '../../src/tools/registry.js';
import { createModelRegistry } from '../../src/providers/registry.js';
import type { RuntimeDeps } from '../../src/runtime/deps.js';
import { Worker } from '../../src/runtime/worker.js';
import { admitTurn, type Admission, type AdmitTurnInput } from '../../src/store/admitTurn.js';
import type { Db, Queryable } from '../../src/store/db.js';
import { readEvents } from '../../src/store/readEvents.js';
import type { JournalEvent, SessionRow } from '../../src/store/types.js';
import { Wakeups } from '../../src/store/wakeups.js';
import { trustedViewer } from '../../src/store/visibility.js';
import { testConfig } from './config.js';

/**
 * Runtime-level helpers: a real Worker on a Db without HTTP, an instrumented model that
 * records what the runtime did with each provider call, and polling waits (never timing
 * assertions: the machine may be slow).
 */

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `condition` until it holds; fails with `what` after `timeoutMs`. */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 25_000,
  intervalMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(intervalMs);
  }
}

/** A test configuration for a Db opened directly (storage settings are unused there). */
export function runtimeConfig(
  overrides: Record<string, unknown> = {},
  env: Record<string, string> = {},
): Config {
  return testConfig({ url: null, dataDir: 'unused' }, overrides, env);
}

/** What the runtime did with one provider call. */
export interface ModelCall {
  /** Text of the last user message of the prompt (the demo model answers that). */
  input: string;
  signal: AbortSignal | undefined;
  /** Stream parts the runtime pulled from the provider. */
  partsRead: number;
  /** The runtime cancelled the provider stream (stopped reading it). */
  cancelled: boolean;
  /** The provider stream ran to its end. */
  finished: boolean;
  /** doStream threw (a provider error before the stream). */
  failed: boolean;
}

/**
 * A provider failure injected into the stream of a call whose input `matches`: after
 * `afterParts` stream parts the stream errors with `error()`. Used `times` times.
 */
export interface StreamFault {
  matches: (input: string) => boolean;
  afterParts: number;
  error: () => unknown;
  times: number;
}

/**
 * Wraps a model registry so that every doStream call is recorded in `calls`, and faults
 * pushed to `faults` are injected mid-stream (the demo model only fails before a stream).
 */
export function instrumentModels(resolve: (provider: string, modelId: string) => LanguageModelV3): {
  resolveModel: (provider: string, modelId: string) => LanguageModelV3;
  calls: ModelCall[];
  faults: StreamFault[];
} {
  const calls: ModelCall[] = [];
  const faults: StreamFault[] = [];
  const resolveModel = (provider: string, modelId: string): LanguageModelV3 => {
    const model = resolve(provider, modelId);
    return {
      ...model,
      async doStream(options: LanguageModelV3CallOptions) {
        const call: ModelCall = {
          input: lastUserText(options),
          signal: options.abortSignal,
          partsRead: 0,
          cancelled: false,
          finished: false,
          failed: false,
        };
        calls.push(call);
        let result;
        try {
          result = await model.doStream(options);
        } catch (error) {
          call.failed = true;
          throw error;
        }
        const reader = result.stream.getReader();
        const fault = faults.find(
          (candidate) => candidate.times > 0 && candidate.matches(call.input),
        );
        if (fault) fault.times -= 1;
        const stream = new ReadableStream<LanguageModelV3StreamPart>({
          async pull(controller) {
            if (fault && call.partsRead >= fault.afterParts) {
              controller.error(fault.error());
              await reader.cancel();
              return;
            }
            const next = await reader.read();
            if (next.done) {
              call.finished = true;
              controller.close();
            } else {
              call.partsRead += 1;
              controller.enqueue(next.value);
            }
          },
          async cancel(reason) {
            call.cancelled = true;
            await reader.cancel(reason);
          },
        });
        return { ...result, stream };
      },
    };
  };
  return { resolveModel, calls, faults };
}

function lastUserText(options: LanguageModelV3CallOptions): string {
  const user = [...options.prompt].reverse().find((message) => message.role === 'user');
  if (!user || typeof user.content === 'string') return '';
  return user.content.map((part) => ('text' in part ? part.text : '')).join('');
}

export interface TestWorker {
  worker: Worker;
  deps: RuntimeDeps;
  calls: ModelCall[];
  faults: StreamFault[];
  stop: () => Promise<void>;
}

/** A real Worker (claim loop + drain loop) on `db`, with its own wake-up subscription. */
export async function startTestWorker(
  db: Db,
  config: Config,
  owner = 'test-worker',
  tools: Map<string, Tool> = builtInTools(),
  /** Where the worker logs (silent by default; a test may read what it wrote). */
  log: RuntimeDeps['log'] = createLogger({ level: 'silent' }),
): Promise<TestWorker> {
  const wakeups = new Wakeups(db);
  await wakeups.start();
  const { resolveModel, calls, faults } = instrumentModels(createModelRegistry(config));
  const deps: RuntimeDeps = {
    db,
    wakeups,
    config,
    resolveModel,
    log,
    owner,
    tools,
  };
  const worker = new Worker(deps);
  worker.start();
  let stopped: Promise<void> | null = null;
  return {
    worker,
    deps,
    calls,
    faults,
    stop: () =>
      (stopped ??= (async () => {
        await worker.stop();
        await wakeups.stop();
      })()),
  };
}

/** Admits a turn through the store, as the API does for the dev principal (every role). */
export function admit(
  db: Db,
  input: { sessionId?: string | null; turnId: string; message: string; agent?: string | null },
): Promise<Admission> {
  return admitTurn(db, admitInput(input));
}

/** What `admit` admits: a message of the local user, as the trusted viewer. */
export function admitInput(input: {
  sessionId?: string | null;
  turnId: string;
  message: string;
  agent?: string | null;
}): AdmitTurnInput {
  return {
    tenant: 'default',
    author: 'local',
    viewer: trustedViewer,
    turnId: input.turnId,
    sessionId: input.sessionId ?? null,
    agent: input.agent ?? null,
    defaultAgent: 'default',
    greetings: new Map(),
    visibilities: new Map(),
    message: input.message,
    option: null,
    attachments: [],
    triggers: new Map(),
    pendingInput: new Map(),
  };
}

/** A journaled event as a test reads it: the payload fields are untyped JSON. */
export type SeenEvent = JournalEvent & Record<string, any>;

/** The whole journal of one session, in order. */
export async function journal(db: Queryable, sessionId: string): Promise<SeenEvent[]> {
  return readEvents(db, sessionId, 0, 100_000);
}

export async function sessionRow(db: Queryable, sessionId: string): Promise<SessionRow> {
  const found = await db.query<SessionRow>('select * from sessions where session_id = $1', [
    sessionId,
  ]);
  const row = found.rows[0];
  if (!row) throw new Error(`no session ${sessionId}`);
  return row;
}

/** The done/cancelled/error events that name `turnId`. */
export async function terminalEventsOf(
  db: Queryable,
  sessionId: string,
  turnId: string,
): Promise<SeenEvent[]> {
  return (await journal(db, sessionId)).filter(
    (event) =>
      ['done', 'cancelled', 'error'].includes(event.type) &&
      (event.turn_ids as string[] | undefined)?.includes(turnId),
  );
}

/** Waits for the one terminal event of `turnId` and returns it. */
export async function waitForTerminal(
  db: Queryable,
  sessionId: string,
  turnId: string,
  timeoutMs = 25_000,
): Promise<SeenEvent> {
  let found: SeenEvent[] = [];
  await waitUntil(
    async () => (found = await terminalEventsOf(db, sessionId, turnId)).length > 0,
    `turn ${turnId} is finished`,
    timeoutMs,
  );
  return found[0] as SeenEvent;
}

/** Waits until nobody holds a lease on the session (its worker released it). */
export async function waitForRelease(db: Queryable, sessionId: string): Promise<void> {
  await waitUntil(
    async () => (await sessionRow(db, sessionId)).lease_token === null,
    `session ${sessionId} is released`,
  );
}

/** Waits until the session's lease has expired by the database's clock. */
export async function waitForLeaseExpiry(db: Queryable, sessionId: string): Promise<void> {
  await waitUntil(async () => {
    const found = await db.query<{ expired: boolean }>(
      `select lease_expires_at is null or lease_expires_at < now() as expired
         from sessions where session_id = $1`,
      [sessionId],
    );
    return found.rows[0]?.expired === true;
  }, `the lease of ${sessionId} has expired`);
}
