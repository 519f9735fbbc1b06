import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compileConfig, ConfigError } from '../src/config/load.js';
import { ParleyError } from '../src/errors.js';
import { admitTurn } from '../src/store/admitTurn.js';
import { cancelTurn } from '../src/store/cancelTurn.js';
import type { Db } from '../src/store/db.js';
import { getSession } from '../src/store/getSession.js';
import { takeClientState } from '../src/store/takeClientState.js';
import { trustedViewer } from '../src/store/visibility.js';
import { builtInTools, resolveAgentTools } from '../src/tools/registry.js';
import { mergePatch } from '../src/tools/state/mergePatch.js';
import { openTestDb } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import {
  admit,
  journal,
  runtimeConfig,
  startTestWorker,
  waitForTerminal,
  waitUntil,
  type TestWorker,
} from './support/runtime-helpers.js';

/**
 * Sessions with state (docs/governance.md), on a real worker and the engine under test:
 * `update_state` is buffered and applied with the turn's commit (journaled as
 * `state_changed` with it), an invalid value is a tool error that changes nothing, a
 * cancelled turn changes nothing, completion closes the session and refuses further
 * input with `session_closed`, a pressed option with an effect is answered without a
 * model call, and the turn-start snapshot reaches the model's instructions.
 */

let db: Db;
let closeDb: () => Promise<void>;
let worker: TestWorker | null = null;

const schema = {
  type: 'object',
  properties: { step: { type: 'integer', minimum: 0 }, note: { type: 'string' } },
  required: ['step'],
  additionalProperties: false,
};
const state = {
  schema,
  initial: { step: 0 },
  options: {
    accept: { set: { step: 10 }, result: { accepted: true }, complete: true, reply: 'Recorded.' },
    later: { set: { note: 'later' }, reply: 'Noted, later then.' },
    broken: { set: { step: -1 }, reply: 'never said' },
  },
};
const config = runtimeConfig({
  agents: {
    default: { tools: { calculator: 'approve' }, state },
    // The demo model signs every reply with what follows `/sign` in its instructions.
    snapshot: { state: { ...state, prompt: '/sign data={{data}}' } },
    plain: {},
  },
});

beforeAll(async () => {
  ({ db, close: closeDb } = await openTestDb());
});
afterEach(async () => {
  await worker?.stop();
  worker = null;
});
afterAll(async () => {
  await checkJournalInvariants(db);
  await closeDb();
});

let counter = 0;
const turnId = () => `st_${Date.now()}_${counter++}`;

async function run(message: string, sessionId: string | null = null, agent: string | null = null) {
  worker ??= await startTestWorker(db, config, 'session-state', builtInTools({ db }));
  const id = turnId();
  const admitted = await admit(db, { sessionId, turnId: id, message, agent });
  const terminal = await waitForTerminal(db, admitted.session_id, id);
  return {
    sessionId: admitted.session_id,
    terminal,
    events: await journal(db, admitted.session_id),
    session: (await getSession(db, 'default', admitted.session_id))!,
  };
}

function press(sessionId: string, id: string, requestId: string, value: string) {
  return admitTurn(db, {
    tenant: 'default',
    author: 'local',
    viewer: trustedViewer,
    turnId: id,
    sessionId,
    agent: null,
    defaultAgent: 'default',
    greetings: new Map(),
    visibilities: new Map(),
    message: '',
    option: { request_id: requestId, value },
    attachments: [],
    triggers: new Map(),
    pendingInput: new Map(),
  });
}

describe('mergePatch (RFC 7386)', () => {
  it('merges objects, removes null members and replaces anything else', () => {
    const target = { a: 1, b: { c: 2, d: 3 }, e: [1] };
    expect(mergePatch(target, { b: { c: null, f: 4 }, e: [2], g: 'x', a: null })).toEqual({
      b: { d: 3, f: 4 },
      e: [2],
      g: 'x',
    });
    expect(target).toEqual({ a: 1, b: { c: 2, d: 3 }, e: [1] });
    expect(mergePatch({ a: 1 }, 'whole')).toBe('whole');
  });
});

describe('agents.X.state in the configuration', () => {
  it('refuses an initial value the schema rejects, naming the key', () => {
    const raw = { agents: { default: { state: { schema, initial: { step: 'one' } } } } };
    expect(() => compileConfig(raw)).toThrow(ConfigError);
    expect(() => compileConfig(raw)).toThrow('agents.default.state.initial');
  });

  it('refuses a schema that does not compile, naming the key', () => {
    const raw = {
      agents: { default: { state: { schema: { type: 'no such type' }, initial: {} } } },
    };
    expect(() => compileConfig(raw)).toThrow('agents.default.state.schema');
  });
});

describe('update_state, buffered and applied with the commit', () => {
  it('runs again after a crash left its call without a result (idempotent by default)', () => {
    // Its change rides the commit and a merge patch applied twice is the same state: a
    // call a dead worker started is run again, never left `interrupted` with the change lost.
    const config = compileConfig({
      agents: { a: { state: { schema: { type: 'object' }, initial: {} } } },
    });
    const resolved = resolveAgentTools(config.agents.a!, builtInTools());
    expect(resolved.find((tool) => tool.name === 'update_state')?.idempotent).toBe(true);
    const clock = compileConfig({ agents: { b: { tools: { clock: 'allow' } } } });
    expect(resolveAgentTools(clock.agents.b!, builtInTools())[0]?.idempotent).toBe(false);
  });

  it('writes the patched data with the commit and journals state_changed before done', async () => {
    const { terminal, events, session } = await run(
      '/tool update_state {"set": {"step": 2, "note": "hi"}, "result": "draft"}',
    );
    expect(terminal.type).toBe('done');
    expect(session.data).toEqual({ step: 2, note: 'hi' });
    expect(session.result).toBe('draft');
    expect(session.state).toBe('idle');
    const changed = events.filter((event) => event.type === 'state_changed');
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatchObject({
      data: { step: 2, note: 'hi' },
      result: 'draft',
      by: 'tool',
    });
    expect(changed[0]!.completed).toBeUndefined();
    expect(changed[0]!.sequence).toBeLessThan(terminal.sequence);
  });

  it('patches what the session committed before, and what an earlier call of the turn left', async () => {
    const first = await run('/tool update_state {"set": {"step": 1, "note": "kept"}}');
    const second = await run(
      '/tool update_state {"set": {"step": 3}}\n/tool update_state {"set": {"note": null}}',
      first.sessionId,
    );
    // Two calls of one step run concurrently; each patches the buffer as it then stands,
    // and the last one applied wins: either way the step is 3 and the commit wrote once.
    expect(second.session.data?.step).toBe(3);
    expect(second.events.filter((event) => event.type === 'state_changed')).toHaveLength(2);
    expect(second.session.result).toBeNull();
  });

  it('refuses a value the schema rejects: a tool error the model sees, nothing changes', async () => {
    const { terminal, events, session } = await run('/tool update_state {"set": {"step": -5}}');
    expect(terminal.type).toBe('done');
    const result = events.find((event) => event.type === 'tool_result');
    expect(result).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
    expect(String(result?.error?.message)).toContain('data/step');
    expect(events.some((event) => event.type === 'state_changed')).toBe(false);
    expect(session.data).toBeNull();
  });

  it('changes nothing for a turn cancelled after its update_state ran', async () => {
    worker ??= await startTestWorker(db, config, 'session-state', builtInTools({ db }));
    const id = turnId();
    const { session_id: sessionId } = await admit(db, {
      turnId: id,
      message: '/tool update_state {"set": {"step": 7}}\n/tool calculator {"expression": "1+1"}',
    });
    await waitUntil(async () => {
      const events = await journal(db, sessionId);
      return (
        events.some((event) => event.type === 'input_required') &&
        events.some((event) => event.type === 'tool_result' && event.tool === 'update_state')
      );
    }, 'the approval request and the update_state result');
    const cancelled = await cancelTurn(db, {
      tenant: 'default',
      sessionId,
      turnId: id,
      commandId: `${id}_cancel`,
      actor: { user: 'local', tenant: 'default' },
    });
    expect(cancelled.result).toBe('cancelled');
    expect((await waitForTerminal(db, sessionId, id)).type).toBe('cancelled');
    const session = await getSession(db, 'default', sessionId);
    expect(session?.data).toBeNull();
    const events = await journal(db, sessionId);
    expect(
      events.find((event) => event.type === 'tool_result' && event.tool === 'update_state'),
    ).toMatchObject({ ok: true });
    expect(events.some((event) => event.type === 'state_changed')).toBe(false);
  });

  it("takes a client's state with its turn's admission, once (AG-UI's RunAgentInput.state)", async () => {
    const { sessionId } = await run('hello');
    const outcomes: string[] = [];
    const admitWith = (id: string, data: Record<string, unknown>) =>
      admitTurn(db, {
        tenant: 'default',
        author: 'local',
        viewer: trustedViewer,
        turnId: id,
        sessionId,
        agent: null,
        defaultAgent: 'default',
        greetings: new Map(),
        visibilities: new Map(),
        message: 'with my state',
        option: null,
        attachments: [],
        triggers: new Map([['default', false]]),
        pendingInput: new Map(),
        guard: async (tx) => {
          outcomes.push(
            await takeClientState(tx, {
              tenant: 'default',
              user: 'local',
              sessionId,
              turnId: id,
              data,
              initial: state.initial,
            }),
          );
        },
      });
    const first = turnId();
    await admitWith(first, { step: 3 });
    await admitWith(first, { step: 3 });
    await admitWith(turnId(), { step: 3 });
    expect(outcomes).toEqual(['written', 'known', 'same']);
    expect((await getSession(db, 'default', sessionId))?.data).toEqual({ step: 3 });
    const events = await journal(db, sessionId);
    const changed = events.filter((event) => event.type === 'state_changed');
    expect(changed).toMatchObject([
      {
        turn_id: first,
        data: { step: 3 },
        by: 'user',
        actor: { user: 'local', tenant: 'default' },
      },
    ]);
    const message = events.find((event) => event.type === 'message' && event.turn_id === first);
    expect(message?.sequence).toBe((changed[0] as { sequence: number }).sequence + 1);
  });

  it('is not offered to an agent without state', async () => {
    const { events } = await run('/tool update_state {"set": {"step": 1}}', null, 'plain');
    const result = events.find((event) => event.type === 'tool_result');
    expect(result?.ok).toBe(false);
    expect(events.some((event) => event.type === 'state_changed')).toBe(false);
  });
});

describe('completion', () => {
  it('closes the session with the commit; a later message is refused and writes nothing', async () => {
    const { events, session, sessionId } = await run(
      '/tool update_state {"set": {"step": 4}, "result": {"score": 9}, "complete": true}',
    );
    expect(session).toMatchObject({ state: 'closed', data: { step: 4 }, result: { score: 9 } });
    expect(events.find((event) => event.type === 'state_changed')).toMatchObject({
      completed: true,
      by: 'tool',
    });
    const before = await journal(db, sessionId);
    const refused = await admit(db, { sessionId, turnId: turnId(), message: 'one more?' }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ParleyError);
    expect((refused as ParleyError).code).toBe('session_closed');
    expect(await journal(db, sessionId)).toHaveLength(before.length);
    const turns = await db.query<{ n: number }>(
      'select count(*)::int as n from turns where session_id = $1',
      [sessionId],
    );
    expect(turns.rows[0]?.n).toBe(1);
    expect((await getSession(db, 'default', sessionId))?.state).toBe('closed');
  });
});

describe('option effects', () => {
  async function offered() {
    const first = await run('Shall I record it?\n/options accept|later|broken|other');
    const offer = first.terminal.final_message.options as { request_id: string };
    return { sessionId: first.sessionId, requestId: offer.request_id };
  }

  it('answers a pressed option with its reply and effect, without a model call', async () => {
    const { sessionId, requestId } = await offered();
    const calls = worker!.calls.length;
    const id = turnId();
    const admitted = await press(sessionId, id, requestId, 'later');
    const terminal = await waitForTerminal(db, sessionId, id);
    expect(terminal.type).toBe('done');
    expect(terminal.final_message.content).toBe('Noted, later then.');
    expect(worker!.calls.length).toBe(calls);
    const events = await journal(db, sessionId);
    expect(events.filter((event) => event.type === 'state_changed')).toEqual([
      expect.objectContaining({ data: { step: 0, note: 'later' }, by: 'option' }),
    ]);
    // The same admission again: the same answer, nothing more written.
    expect(await press(sessionId, id, requestId, 'later')).toEqual(admitted);
    expect(await journal(db, sessionId)).toHaveLength(events.length);
    expect((await getSession(db, 'default', sessionId))?.data).toEqual({ step: 0, note: 'later' });
  });

  it('completes the session when the effect says so', async () => {
    const { sessionId, requestId } = await offered();
    const id = turnId();
    await press(sessionId, id, requestId, 'accept');
    expect((await waitForTerminal(db, sessionId, id)).final_message.content).toBe('Recorded.');
    expect(await getSession(db, 'default', sessionId)).toMatchObject({
      state: 'closed',
      data: { step: 10 },
      result: { accepted: true },
    });
  });

  it('ends the turn with invalid_state when the effect would break the schema', async () => {
    const { sessionId, requestId } = await offered();
    const id = turnId();
    await press(sessionId, id, requestId, 'broken');
    const terminal = await waitForTerminal(db, sessionId, id);
    expect(terminal).toMatchObject({ type: 'error', code: 'invalid_state' });
    expect((await getSession(db, 'default', sessionId))?.data).toBeNull();
  });

  it('leaves an option without an entry to the model, as before', async () => {
    const { sessionId, requestId } = await offered();
    const calls = worker!.calls.length;
    const id = turnId();
    await press(sessionId, id, requestId, 'other');
    const terminal = await waitForTerminal(db, sessionId, id);
    expect(terminal.final_message.content).toContain('Selected option: other');
    expect(worker!.calls.length).toBe(calls + 1);
  });
});

describe('the turn-start snapshot', () => {
  it("appends state.prompt with the session's data to the instructions", async () => {
    const first = await run('hello', null, 'snapshot');
    expect(first.terminal.final_message.content).toContain('(signed: data={"step":0})');
    const second = await run('/tool update_state {"set": {"step": 5}}', first.sessionId);
    expect(second.terminal.type).toBe('done');
    const third = await run('again', first.sessionId);
    expect(third.terminal.final_message.content).toContain('(signed: data={"step":5})');
  });
});
