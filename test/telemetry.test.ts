import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type Running } from '../src/cli/start.js';
import { agentSchema } from '../src/config/schema.js';
import { compileConfig, ConfigError } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { turnTraceId } from '../src/telemetry/traceId.js';
import { noTelemetry } from '../src/telemetry/tracing.js';
import { testConfig } from './support/config.js';
import { freshStorage } from './support/db.js';
import { startOtlpReceiver, type OtlpReceiver, type RecordedSpan } from './support/otlp.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// OpenTelemetry GenAI spans (docs/deployment.md, "OpenTelemetry"): a real Parley process
// with the demo model exports to a receiver inside the test, over OTLP/HTTP protobuf and
// JSON; spans are decoded from the bytes that arrived.

const tenant = 'default';
const agents = {
  default: { model: 'demo/echo' },
  counter: { model: 'demo/echo', tools: { calculator: 'allow' } },
  careful: { model: 'demo/echo', tools: { calculator: 'approve' } },
  gated: { model: 'demo/echo', gate: { model: 'demo/gate', topic: 'cooking' } },
};
const missions = { looping: { prompt: 'Tidy the inbox.', loop_prompt: '/decide continue:2' } };

async function admit(url: string, turnId: string, message: string, agent = 'default') {
  const admitted = await request(url, 'POST', '/api/v1/chat/turns', {
    turn_id: turnId,
    message,
    agent,
  });
  expect(admitted.status).toBe(202);
  return admitted.body as { session_id: string };
}

/** Flushes the process's spans until the turn's runs have all ended and arrived. */
async function spansOfTurn(
  running: Pick<Running, 'telemetry'>,
  receiver: OtlpReceiver,
  turnId: string,
  runs = 1,
): Promise<RecordedSpan[]> {
  const traceId = turnTraceId(tenant, turnId);
  return until(
    async () => {
      await running.telemetry.flush();
      return receiver.spans().filter((span) => span.traceId === traceId);
    },
    (spans) => spans.filter((span) => span.name.startsWith('invoke_agent')).length >= runs,
    `the spans of ${turnId}`,
  );
}

function byName(spans: RecordedSpan[], name: string): RecordedSpan[] {
  return spans.filter((span) => span.name === name);
}

describe('telemetry over OTLP/HTTP protobuf, without content', () => {
  let receiver: OtlpReceiver;
  let server: TestServer;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    server = await startTestServer(
      {
        agents,
        missions,
        telemetry: {
          otlp_endpoint: receiver.url,
          otlp_headers_from_env: { 'x-collector-token': 'OTLP_TOKEN' },
        },
      },
      { OTLP_TOKEN: 'collector-secret' },
    );
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('exports invoke_agent, chat and execute_tool spans as one tree in the turn’s trace', async () => {
    const { session_id } = await admit(
      server.url,
      'otel_tool_1',
      '/tool calculator {"expression": "6*7"}',
      'counter',
    );
    const spans = await spansOfTurn(server, receiver, 'otel_tool_1');

    const [agent] = byName(spans, 'invoke_agent counter');
    expect(agent).toBeDefined();
    expect(agent?.parentSpanId).toBe('');
    expect(agent?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'counter',
      'gen_ai.conversation.id': session_id,
      'parley.turn_id': 'otel_tool_1',
      'parley.tenant': tenant,
      'parley.attempt': 1,
      'parley.outcome': 'finished',
    });
    expect(agent?.statusCode).toBe(0);

    // The API process's admission: another root of the same trace.
    const [admitted] = byName(spans, 'parley.turn');
    expect(admitted?.parentSpanId).toBe('');
    expect(admitted?.statusCode).toBe(0);
    expect(admitted?.attributes).toMatchObject({
      'parley.tenant': tenant,
      'parley.turn_id': 'otel_tool_1',
      'gen_ai.conversation.id': session_id,
      'parley.admission': 'accepted',
    });

    // Two model calls (the one proposing the call, the reply), one tool call, all children.
    const chats = byName(spans, 'chat echo');
    expect(chats).toHaveLength(2);
    const [tool] = byName(spans, 'execute_tool calculator');
    expect(tool).toBeDefined();
    for (const child of [...chats, tool as RecordedSpan]) {
      expect(child.parentSpanId).toBe(agent?.spanId);
      expect(child.traceId).toBe(turnTraceId(tenant, 'otel_tool_1'));
    }
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'demo',
        'gen_ai.request.model': 'echo',
        'gen_ai.response.model': 'echo',
        'gen_ai.response.finish_reasons': ['stop'],
        'gen_ai.conversation.id': session_id,
        'parley.cost_usd': 0,
      });
      expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    }
    expect(chats.map((chat) => chat.attributes['gen_ai.usage.output_tokens'])).toContain(0);
    expect(
      chats.some((chat) => (chat.attributes['gen_ai.usage.output_tokens'] as number) > 0),
    ).toBe(true);
    const callId = tool?.attributes['gen_ai.tool.call.id'];
    expect(tool?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'calculator',
      'gen_ai.tool.type': 'function',
    });
    expect(callId).toMatch(/^call_/);

    // No content by default: no message, argument or result attribute, nor the text itself.
    for (const span of spans) {
      expect(
        Object.keys(span.attributes).filter((key) =>
          /messages|instructions|call\.(arguments|result)/.test(key),
        ),
      ).toEqual([]);
    }
    for (const received of receiver.exports) {
      expect(received.body.includes('6*7')).toBe(false);
      expect(received.body.includes('You said')).toBe(false);
    }
  });

  it("puts the gate's call under its run, and a loop's evaluation in its iteration's trace", async () => {
    await admit(server.url, 'otel_gate_1', 'rewire the boiler /offtopic', 'gated');
    const gated = await spansOfTurn(server, receiver, 'otel_gate_1');
    const [run] = byName(gated, 'invoke_agent gated');
    const [gate] = byName(gated, 'chat gate');
    expect(gate?.parentSpanId).toBe(run?.spanId);
    expect(gate?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gate',
      'parley.purpose': 'gate',
    });
    expect(typeof gate?.attributes['gen_ai.usage.input_tokens']).toBe('number');
    // Off topic: the gate's redirect is the reply, no other model call.
    expect(gated.filter((span) => span.name.startsWith('chat '))).toHaveLength(1);

    const dispatched = await request(server.url, 'POST', '/api/v1/missions/looping/executions', {
      execution_id: 'otel_loop',
    });
    expect(dispatched.status).toBe(202);
    const firstIteration = turnTraceId(tenant, 'exec.otel_loop.1');
    const evaluations = await until(
      async () => {
        await server.telemetry.flush();
        return receiver
          .spans()
          .filter(
            (span) =>
              span.traceId === firstIteration && span.attributes['parley.purpose'] === 'evaluation',
          );
      },
      (found) => found.length === 1,
      "the first iteration's evaluation",
    );
    expect(evaluations[0]).toMatchObject({ name: 'chat echo', parentSpanId: '', statusCode: 0 });
    expect(evaluations[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.conversation.id': dispatched.body.session_id,
    });
  });

  it('sends protobuf with the configured header and the service name', async () => {
    await admit(server.url, 'otel_plain_1', 'hello telemetry');
    const spans = await spansOfTurn(server, receiver, 'otel_plain_1');
    expect(receiver.exports.length).toBeGreaterThan(0);
    for (const received of receiver.exports) {
      expect(received.contentType).toBe('application/x-protobuf');
      expect(received.headers['x-collector-token']).toBe('collector-secret');
    }
    expect(spans[0]?.resource['service.name']).toBe('parley');
    expect(byName(spans, 'invoke_agent default')).toHaveLength(1);
    expect(byName(spans, 'chat echo')).toHaveLength(1);

    // The same turn id with another message is refused: its admission span says why.
    const conflict = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'otel_plain_1',
      message: 'something else',
    });
    expect(conflict.status).toBe(409);
    const admissions = await until(
      async () => {
        await server.telemetry.flush();
        return byName(receiver.spans(), 'parley.turn').filter(
          (span) => span.attributes['parley.turn_id'] === 'otel_plain_1',
        );
      },
      (found) => found.length === 2,
      'the refused admission',
    );
    expect(admissions.map((span) => span.attributes['error.type'] ?? null)).toEqual([
      null,
      'turn_conflict',
    ]);
    expect(new Set(admissions.map((span) => span.traceId)).size).toBe(1);
  });

  it('puts the run resumed after an approval in the same trace; its tool call under it', async () => {
    const { session_id } = await admit(
      server.url,
      'otel_approve_1',
      '/tool calculator {"expression": "2+3"}',
      'careful',
    );
    const waiting = await until(
      () => request(server.url, 'GET', `/api/v1/chat/sessions/${session_id}`),
      (projection) => projection.body.state === 'input_required',
      'the approval request',
    );
    const pending = waiting.body.pending_input as { request_id: string; expected_sequence: number };
    const answered = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${session_id}/inputs/${pending.request_id}`,
      { expected_sequence: pending.expected_sequence, approved: true },
    );
    expect(answered.status).toBeLessThan(300);
    const spans = await spansOfTurn(server, receiver, 'otel_approve_1', 2);
    const runs = byName(spans, 'invoke_agent careful');
    expect(runs.map((run) => run.attributes['parley.outcome']).sort()).toEqual([
      'finished',
      'waiting',
    ]);
    // Resuming after a person's answer continues the same attempt.
    expect(runs.map((run) => run.attributes['parley.attempt'])).toEqual([1, 1]);
    const resumed = runs.find((run) => run.attributes['parley.outcome'] === 'finished');
    const [tool] = byName(spans, 'execute_tool calculator');
    expect(tool?.parentSpanId).toBe(resumed?.spanId);
    expect(tool?.statusCode).toBe(0);
  });
});

describe('telemetry over OTLP/HTTP JSON, with content', () => {
  let receiver: OtlpReceiver;
  let server: TestServer;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    server = await startTestServer({
      agents,
      telemetry: {
        otlp_endpoint: `${receiver.url}/v1/traces`,
        otlp_protocol: 'http/json',
        capture_content: true,
        service_name: 'parley-test',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('records messages, tool arguments and results as the conventions name them', async () => {
    await admit(server.url, 'otel_json_1', '/tool calculator {"expression": "6*7"}', 'counter');
    const spans = await spansOfTurn(server, receiver, 'otel_json_1');
    for (const received of receiver.exports) {
      expect(received.contentType).toBe('application/json');
      expect(() => JSON.parse(received.body.toString('utf8')) as unknown).not.toThrow();
    }
    expect(spans[0]?.resource['service.name']).toBe('parley-test');

    const chats = byName(spans, 'chat echo');
    expect(chats).toHaveLength(2);
    const input = JSON.parse(chats[0]?.attributes['gen_ai.input.messages'] as string) as {
      role: string;
      parts: { type: string; content?: string }[];
    }[];
    const user = input.find((message) => message.role === 'user');
    expect(JSON.stringify(user?.parts)).toContain('6*7');
    const firstOutput = JSON.parse(chats[0]?.attributes['gen_ai.output.messages'] as string) as {
      role: string;
      parts: { type: string; name?: string }[];
    }[];
    expect(firstOutput[0]?.role).toBe('assistant');
    expect(firstOutput[0]?.parts).toContainEqual(
      expect.objectContaining({ type: 'tool_call', name: 'calculator' }),
    );
    const reply = chats[1]?.attributes['gen_ai.output.messages'] as string;
    expect(reply).toContain('42');
    // The second call saw the tool's result.
    expect(chats[1]?.attributes['gen_ai.input.messages'] as string).toContain('tool_call_response');

    const [tool] = byName(spans, 'execute_tool calculator');
    expect(JSON.parse(tool?.attributes['gen_ai.tool.call.arguments'] as string)).toEqual({
      expression: '6*7',
    });
    expect(tool?.attributes['gen_ai.tool.call.result'] as string).toContain('42');
  });

  it('records a failed model call and a failed turn as errors', async () => {
    await admit(server.url, 'otel_fail_1', '/fail permanent');
    const spans = await spansOfTurn(server, receiver, 'otel_fail_1');
    const [agent] = byName(spans, 'invoke_agent default');
    expect(agent?.statusCode).toBe(2);
    expect(agent?.attributes['error.type']).toBe('provider_auth');
    const [chat] = byName(spans, 'chat echo');
    expect(chat?.statusCode).toBe(2);
    expect(chat?.attributes['error.type']).toBe('provider_auth');
    expect(chat?.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
  });
});

describe('a turn taken over by another worker', () => {
  it('lands both runs in one trace, each with its attempt', async () => {
    const receiver = await startOtlpReceiver();
    const fresh = await freshStorage();
    const telemetry = { otlp_endpoint: receiver.url };
    const launch = (overrides: Record<string, unknown>) =>
      startProcess(
        testConfig(fresh.storage, { agents, telemetry, ...overrides }),
        { api: true, worker: true },
        createLogger({ level: 'silent' }),
        { checkResponses: true },
      );
    // The first worker's call streams two words, then only keep-alives: it never ends by
    // itself. Its process stops with a short grace period, handing the turn over.
    const first = await launch({ runtime: { shutdown_grace_ms: 100 } });
    let second: Running | null = null;
    try {
      const { session_id } = await admit(first.url ?? '', 'otel_crash_1', '/keepalive and more');
      await until(
        () =>
          first.db.query<{ count: string }>(
            `select count(*) as count from events where session_id = $1 and type = 'text_delta'`,
            [session_id],
          ),
        (result) => Number(result.rows[0]?.count) > 0,
        'the first run to stream',
      );
      await first.stop();

      // The next worker redoes the turn; its watchdog ends the stalled call, and the turn.
      second = await launch({ watchdog: { stall_ms: 200, retries: 0 } });
      const spans = await spansOfTurn(second, receiver, 'otel_crash_1', 2);
      const runs = byName(spans, 'invoke_agent default').sort(
        (a, b) =>
          (a.attributes['parley.attempt'] as number) - (b.attributes['parley.attempt'] as number),
      );
      expect(runs.map((run) => run.attributes['parley.attempt'])).toEqual([1, 2]);
      expect(new Set(runs.map((run) => run.traceId))).toEqual(
        new Set([turnTraceId(tenant, 'otel_crash_1')]),
      );
      expect(runs.map((run) => run.parentSpanId)).toEqual(['', '']);
      expect(runs[0]?.spanId).not.toBe(runs[1]?.spanId);
      expect(runs.map((run) => run.attributes['error.type'])).toEqual(['shutdown', 'stalled']);
      expect(runs.map((run) => run.resource['service.instance.id'])).toHaveLength(2);
      // Each run's model call is its own child.
      const chats = byName(spans, 'chat echo');
      expect(chats.map((chat) => chat.parentSpanId).sort()).toEqual(
        runs.map((run) => run.spanId).sort(),
      );
      expect(chats.map((chat) => chat.attributes['error.type']).sort()).toEqual([
        'aborted',
        'stalled',
      ]);
    } finally {
      await first.stop();
      await second?.stop();
      await fresh.drop();
      await receiver.close();
    }
  });
});

describe('telemetry configuration', () => {
  it('is off without an endpoint: no exporter, the no-op telemetry', async () => {
    const server = await startTestServer({ agents });
    try {
      expect(server.config.telemetry.tracesUrl).toBeNull();
      expect(server.telemetry).toBe(noTelemetry);
    } finally {
      await server.close();
    }
  });

  it('compiles the endpoint to its traces path and checks header variables without echoing them', () => {
    const compiled = compileConfig({ telemetry: { otlp_endpoint: 'http://collector:4318/' } });
    expect(compiled.telemetry).toMatchObject({
      tracesUrl: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      captureContent: false,
      serviceName: 'parley',
    });
    const withHeader = {
      telemetry: {
        otlp_endpoint: 'http://collector:4318',
        otlp_headers_from_env: { authorization: 'OTLP_AUTH' },
      },
    };
    expect(() => compileConfig(withHeader, {})).toThrow(ConfigError);
    expect(() => compileConfig(withHeader, {})).toThrow(
      'telemetry.otlp_headers_from_env.authorization: the variable OTLP_AUTH is not set',
    );
    expect(compileConfig(withHeader, { OTLP_AUTH: 'Bearer s3cret' }).telemetry).not.toHaveProperty(
      'headers',
    );
    expect(JSON.stringify(compileConfig(withHeader, { OTLP_AUTH: 'Bearer s3cret' }))).not.toContain(
      's3cret',
    );
    expect(() => compileConfig({ telemetry: { otlp_protocol: 'grpc' } })).toThrow(ConfigError);
    expect(() => compileConfig({ telemetry: { otlp_headers: { a: 'b' } } })).toThrow(ConfigError);
  });

  it('is the operator’s alone: an agent definition cannot carry it', () => {
    expect(
      agentSchema.safeParse({ model: 'demo/echo', telemetry: { capture_content: true } }).success,
    ).toBe(false);
  });

  it('derives a turn’s trace id from its tenant and turn id', () => {
    expect(turnTraceId('acme', 'turn_1')).toMatch(/^[0-9a-f]{32}$/);
    expect(turnTraceId('acme', 'turn_1')).toBe(turnTraceId('acme', 'turn_1'));
    expect(turnTraceId('acme', 'turn_1')).not.toBe(turnTraceId('globex', 'turn_1'));
    expect(turnTraceId('a', 'bc')).not.toBe(turnTraceId('ab', 'c'));
  });
});
