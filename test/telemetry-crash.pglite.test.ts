import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { turnTraceId } from '../src/telemetry/traceId.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp.js';
import { until } from './support/poll.js';
import { startParley, stopAllProcesses } from './support/processes.js';
import { request } from './support/server.js';
import { SseClient } from './support/sse.js';
import { copyPgliteTemplate } from './support/template.js';

// OpenTelemetry across a SIGKILL (docs/deployment.md, "OpenTelemetry"): `parley serve` on
// embedded storage exports to a receiver in the test, is killed mid-reply and restarted
// on the same data directory. The killed run's span never ends (nothing is exported for
// it); the run that finishes the turn lands in the same trace — its id derived from the
// tenant and turn id, not carried by any process — as the run after the crash, attempt 2.

const env = { PARLEY_LEASE_TTL_MS: '600000', PARLEY_DEMO_DELAY_MS: '50' };
const message = Array.from({ length: 60 }, (_, index) => `word${index + 1}`).join(' ');

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0)) await clean();
});

describe('telemetry when parley serve (PGlite) is killed mid-reply', () => {
  it("puts the run after the restart in the turn's own trace, as attempt 2", async () => {
    const receiver: OtlpReceiver = await startOtlpReceiver();
    cleanup.push(() => receiver.close());
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-otel-crash-'));
    copyPgliteTemplate(dataDir);
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const config = {
      runtime: { poll_ms: 200, shutdown_grace_ms: 2000 },
      telemetry: { otlp_endpoint: receiver.url },
    };
    const turnId = 'otel_sigkill_1';

    const first = await startParley('serve', { dataDir, env, config });
    const admitted = await request(first.url as string, 'POST', '/api/v1/chat/turns', {
      turn_id: turnId,
      message,
    });
    expect(admitted.status).toBe(202);
    const stream = await SseClient.open(first.url as string, admitted.body.session_id);
    cleanup.push(() => stream.close());
    await stream.waitFor(
      (client) => client.events.filter((event) => event.type === 'text_delta').length >= 3,
      30_000,
    );
    first.kill('SIGKILL');
    expect(await first.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });

    const second = await startParley('serve', { dataDir, env, config });
    await until(
      () =>
        request(second.url as string, 'GET', `/api/v1/chat/sessions/${admitted.body.session_id}`),
      (session) => session.body.state === 'idle' && session.body.current_turn === null,
      'the turn to end after the restart',
    );
    // A graceful stop flushes what the second process still holds.
    second.kill('SIGTERM');
    expect(await second.waitForExit()).toEqual({ code: 0, signal: null });

    const traceId = turnTraceId('default', turnId);
    const spans = receiver.spans().filter((span) => span.traceId === traceId);
    const runs = spans.filter((span) => span.name === 'invoke_agent default');
    expect(runs.map((run) => run.attributes['parley.attempt'])).toEqual([2]);
    expect(runs[0]?.attributes['error.type']).toBeUndefined();
    expect(runs[0]?.parentSpanId).toBe('');
    // Its model call is its child, in the same trace.
    const chats = spans.filter((span) => span.name === 'chat echo');
    expect(chats.map((chat) => chat.parentSpanId)).toContain(runs[0]?.spanId);
    // Nothing of the turn went to any other trace.
    const elsewhere = receiver
      .spans()
      .filter((span) => span.traceId !== traceId && span.attributes['parley.turn_id'] === turnId);
    expect(elsewhere).toEqual([]);
  });
});
