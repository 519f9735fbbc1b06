import { readEvents } from '../src/store/readEvents.js';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres } from '../src/store/postgres.js';
import { freshStorage } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import { startParley, stopAllProcesses, type StartOptions } from './support/processes.js';
import { request } from './support/server.js';

// A worker is SIGKILLed between an approval and the call's execution: the approved call
// runs exactly once, on the worker that picks the session up.

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0).reverse()) await clean();
});

describe('approval survives a worker crash', () => {
  it('runs the approved invocation exactly once after the waiting worker was killed', async () => {
    const fresh = await freshStorage();
    cleanup.push(() => fresh.drop());
    const url = fresh.storage.url as string;
    const options: StartOptions = {
      databaseUrl: url,
      readyTimeoutMs: 60_000,
      config: {
        runtime: { lease_ttl_ms: 3000, heartbeat_ms: 1000, poll_ms: 200 },
        agents: { default: { model: 'demo/echo', tools: { calculator: 'approve' } } },
      },
      env: { PARLEY_DEMO_DELAY_MS: '0' },
    };
    const api = await startParley('api', options);
    const worker = await startParley('worker', options);
    const db = await openPostgres(url, 2);
    cleanup.push(() => db.close());
    const base = api.url as string;

    const admitted = await request(base, 'POST', '/api/v1/chat/turns', {
      turn_id: 'crash_approve',
      message: '/tool calculator {"expression": "6*7"}',
    });
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id as string;
    const journal = async (): Promise<any[]> => readEvents(db, sessionId, 0, 100_000);
    const until = async (done: (events: any[]) => boolean) => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const events = await journal();
        if (done(events)) return events;
        if (Date.now() > deadline)
          throw new Error(`timed out: ${events.map((event) => event.type).join(' ')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const required = (
      await until((events) => events.some((event) => event.type === 'input_required'))
    ).find((event) => event.type === 'input_required');

    worker.child.kill('SIGKILL');
    expect((await worker.exited).signal).toBe('SIGKILL');
    const answered = await request(
      base,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${required.request_id}`,
      {
        expected_sequence: required.sequence,
        approved: true,
      },
    );
    expect(answered.status).toBe(200);
    // Nobody can run it now: no worker is alive.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await journal()).some((event) => event.type === 'tool_result')).toBe(false);

    await startParley('worker', options);
    const events = await until((list) => list.some((event) => event.type === 'done'));
    const results = events.filter(
      (event) => event.type === 'tool_result' && event.call_id === required.call_id,
    );
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ ok: true, result: { result: 42 } });
    expect(events.filter((event) => event.type === 'done')).toHaveLength(1);
    await checkJournalInvariants(db);
  });
});
