import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJournalInvariants } from './support/invariants.js';
import { journal, waitForTerminal } from './support/runtime-helpers.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * providers.md, "Circuit protection": a provider whose calls keep failing opens its
 * circuit; an agent with a `fallback_model` then answers from the fallback without
 * another call to the failing provider; the catalog and /metrics show the open circuit.
 */
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    // Two failed calls on each model fit in one step's retries.
    runtime: { retry_attempts: 5 },
    providers: {
      demo: { kind: 'demo' },
      flaky: { kind: 'demo', circuit: { failures: 2, open_ms: 3_600_000 } },
    },
    agents: {
      default: { model: 'demo/echo' },
      guarded: { model: 'flaky/echo', fallback_model: 'demo/echo' },
    },
  });
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

async function turn(body: Record<string, unknown>) {
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', body);
  expect(admitted.status, JSON.stringify(admitted.body)).toBe(202);
  const sessionId = admitted.body.session_id as string;
  const terminal = await waitForTerminal(server.db, sessionId, body.turn_id as string);
  return { sessionId, terminal, events: await journal(server.db, sessionId) };
}

describe('provider circuit', () => {
  it('opens after consecutive failures; the agent fails over to its fallback model', async () => {
    // The failing provider's first two calls fail (429): the circuit opens, the third
    // attempt is refused at once and goes to the fallback, which answers.
    const first = await turn({
      turn_id: 'circuit_1',
      agent: 'guarded',
      message: '/fail transient 2 circuit',
    });
    expect(first.terminal).toMatchObject({ type: 'done' });
    const usage = first.events.filter((event) => event.type === 'usage');
    expect(usage.map((event) => [event.model, event.outcome])).toEqual([
      ['flaky/echo', 'failed'],
      ['flaky/echo', 'failed'],
      // The fallback model is a fresh demo model: it fails the scripted first two calls too.
      ['demo/echo', 'failed'],
      ['demo/echo', 'failed'],
      ['demo/echo', 'ok'],
    ]);

    // Still open: the next turn goes straight to the fallback, billed as the fallback.
    const second = await turn({ turn_id: 'circuit_2', agent: 'guarded', message: 'hello again' });
    expect(second.terminal).toMatchObject({
      type: 'done',
      final_message: { content: 'You said: hello again' },
    });
    expect(
      second.events.filter((event) => event.type === 'usage').map((event) => event.model),
    ).toEqual(['demo/echo']);

    const catalog = await request(server.url, 'GET', '/api/v1/models?provider=flaky');
    expect(catalog.status).toBe(200);
    expect(catalog.body.items.length).toBeGreaterThan(0);
    expect(catalog.body.items.every((item: { circuit: string }) => item.circuit === 'open')).toBe(
      true,
    );
    const others = await request(server.url, 'GET', '/api/v1/models?provider=demo');
    expect(others.body.items.every((item: { circuit: string }) => item.circuit === 'closed')).toBe(
      true,
    );
    const metrics = await fetch(`${server.url}/metrics`);
    const text = await metrics.text();
    expect(text).toMatch(/parley_provider_circuit_state\{provider="flaky"\} 1/);
    expect(text).toMatch(/parley_provider_circuit_opened_total\{provider="flaky"\} 1/);
  });
});
