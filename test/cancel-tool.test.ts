import { readEvents } from '../src/store/readEvents.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { createModelRegistry } from '../src/providers/registry.js';
import { Worker } from '../src/runtime/worker.js';
import type { Tool } from '../src/tools/types.js';
import { Wakeups } from '../src/store/wakeups.js';
import { checkJournalInvariants } from './support/invariants.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Cancel while a tool runs (PROTOCOL.md §5): the tool is not killed, it finishes and its
// result is recorded; nothing further runs; then `cancelled`. The tool implementation is
// injected (the runtime takes its tools as I/O), so it can be slow on purpose.

let server: TestServer;
let worker: Worker;
let wakeups: Wakeups;
const executions: string[] = [];

const slowCalculator: Tool = {
  name: 'calculator',
  description: 'a slow stand-in for the calculator',
  inputSchema: {
    type: 'object',
    properties: { expression: { type: 'string' } },
    required: ['expression'],
    additionalProperties: false,
  },
  async execute(args) {
    executions.push((args as { expression: string }).expression);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    return { result: 1 };
  },
};

beforeAll(async () => {
  server = await startTestServer(
    { agents: { default: { model: 'demo/echo', tools: { calculator: 'allow' } } } },
    {},
    { api: true, worker: false },
  );
  wakeups = new Wakeups(server.db);
  await wakeups.start();
  worker = new Worker({
    db: server.db,
    wakeups,
    config: server.config,
    resolveModel: createModelRegistry(server.config),
    log: createLogger({ level: 'silent' }),
    owner: 'tool-worker',
    tools: new Map([['calculator', slowCalculator]]),
  });
  worker.start();
});
afterAll(async () => {
  await worker.stop();
  await wakeups.stop();
  await checkJournalInvariants(server.db);
  await server.close();
});

describe('cancel while a tool runs', () => {
  it('lets the running tool finish, records its result, runs nothing further, then cancels', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'tool_cancel',
      message: '/tool calculator {"expression": "1"}',
    });
    const sessionId = admitted.body.session_id;
    const journal = async (): Promise<any[]> => readEvents(server.db, sessionId, 0, 100_000);
    const deadline = Date.now() + 30_000;
    while (executions.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(executions).toEqual(['1']);
    const answer = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/turns/tool_cancel/cancel`,
      {
        command_id: 'cancel_tool',
      },
    );
    expect(answer.body).toMatchObject({ result: 'cancelled', state: 'cancelling' });
    let events = await journal();
    while (!events.some((event) => event.type === 'cancelled') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      events = await journal();
    }
    const types = events.map((event) => event.type);
    expect(types).toContain('cancelled');
    // the tool finished and its result was journaled before the cancel took effect
    expect(types.indexOf('tool_result')).toBeGreaterThan(-1);
    expect(types.indexOf('tool_result')).toBeLessThan(types.indexOf('cancelled'));
    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      ok: true,
      result: { result: 1 },
    });
    // nothing further ran: no second model step, no done
    expect(types).not.toContain('done');
    expect(types.slice(types.indexOf('tool_result') + 1)).toEqual(['cancelled']);
    expect(executions).toEqual(['1']);
  });
});
