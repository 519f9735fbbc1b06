import { copyPgliteTemplate } from './support/template.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPglite } from '../src/store/pglite.js';
import { checkJournalInvariants } from './support/invariants.js';
import { startParley, stopAllProcesses } from './support/processes.js';
import { request } from './support/server.js';
import { SseClient } from './support/sse.js';

// `parley serve` on embedded storage, killed with SIGKILL mid-reply and restarted on the
// same data directory: nothing acknowledged is lost, the lock of the dead process is taken
// over, and a reconnecting client sees every event exactly once (RUNTIME.md, PROTOCOL.md §3).
//
// The lease ttl is ten minutes, set alone (the heartbeat defaults to a third of it): the
// restart must not wait for the dead process's lease to expire, because the data
// directory's lock already proves that process gone (issue 6, item 13).

const leaseTtlMs = 600_000;
const env = {
  PARLEY_LEASE_TTL_MS: String(leaseTtlMs),
  // 62 words at 50 ms: the reply streams for about three seconds.
  PARLEY_DEMO_DELAY_MS: '50',
};
const config = { runtime: { poll_ms: 200, shutdown_grace_ms: 2000 } };

const words = Array.from({ length: 60 }, (_, index) => `word${index + 1}`);
const message = words.join(' ');
const expectedReply = `You said: ${message}`;

const cleanup: (() => void)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0)) clean();
});

describe('parley serve (PGlite) killed with SIGKILL mid-reply', () => {
  it('restarts on the same data directory and the reconnecting client sees every event once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-crash-'));
    copyPgliteTemplate(dataDir);
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const streams: SseClient[] = [];
    cleanup.push(() => streams.forEach((stream) => stream.close()));

    const first = await startParley('serve', { dataDir, env, config });
    const url1 = first.url as string;
    const turnId = `turn_crash_${Date.now()}`;
    const admitted = await request(url1, 'POST', '/api/v1/chat/turns', {
      turn_id: turnId,
      message,
    });
    expect(admitted.status).toBe(202);
    const sessionId: string = admitted.body.session_id;

    // A client follows the reply until some text has streamed, then the process dies.
    const before = await SseClient.open(url1, sessionId);
    streams.push(before);
    expect(before.status).toBe(200);
    await before.waitFor(
      (client) => client.events.filter((event) => event.type === 'text_delta').length >= 3,
      30_000,
    );
    first.kill('SIGKILL');
    expect(await first.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
    // The server vanished: the first connection ends without any goodbye.
    await before.waitFor((client) => client.closed, 30_000);
    expect(
      before.events.some((event) => event.type === 'done'),
      'the kill must land mid-reply (the reply finished before the kill: make it longer)',
    ).toBe(false);
    const lastSeen = Math.max(...before.events.map((event) => event.sequence));

    // The dead process's lock file is still there; the restart must take it over.
    // Its first line is the owner's pid (the second its start time).
    expect(readFileSync(join(dataDir, 'parley.lock'), 'utf8').split('\n')[0]).toBe(
      String(first.pid),
    );
    const second = await startParley('serve', { dataDir, env, config });
    const url2 = second.url as string;
    expect(readFileSync(join(dataDir, 'parley.lock'), 'utf8').split('\n')[0]).toBe(
      String(second.pid),
    );

    const after = await SseClient.open(url2, sessionId, { lastEventId: String(lastSeen) });
    streams.push(after);
    expect(after.status).toBe(200);
    await after.waitForType('done', 30_000);
    after.close();

    // Across both connections: every sequence from 1 exactly once, in order.
    const all = [...before.events, ...after.events];
    const sequences = all.map((event) => event.sequence);
    expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, index) => index + 1));
    for (const frame of [...before.frames, ...after.frames].filter((frame) => frame.id !== null)) {
      expect(Number(frame.id)).toBe(frame.data.sequence);
      expect(frame.event).toBe(frame.data.type);
    }
    expect(after.events[0].sequence).toBe(lastSeen + 1);

    // Exactly one done, for this turn, carrying the demo's whole reply.
    const dones = all.filter((event) => event.type === 'done');
    expect(dones).toHaveLength(1);
    expect(dones[0]).toMatchObject({
      turn_id: turnId,
      turn_ids: [turnId],
      final_message: { role: 'assistant', content: expectedReply },
    });
    expect(all.filter((event) => event.type === 'error' || event.type === 'cancelled')).toEqual([]);

    // The killed attempt left partial text, so the new attempt opens with attempt_reset.
    const types = all.map((event) => event.type);
    const reset = types.indexOf('attempt_reset');
    expect(reset, `attempt_reset journaled; saw ${types.join(' ')}`).toBeGreaterThan(-1);
    expect(types.filter((type) => type === 'attempt_reset')).toHaveLength(1);
    const startedIndexes = types.flatMap((type, index) => (type === 'turn_started' ? [index] : []));
    expect(startedIndexes).toHaveLength(2);
    const [firstStart, secondStart] = startedIndexes as [number, number];
    expect(all[firstStart]).toMatchObject({ attempt: 1, turn_ids: [turnId] });
    expect(all[secondStart]).toMatchObject({ attempt: 2, turn_ids: [turnId] });
    expect(reset).toBe(secondStart - 1);
    expect(all[reset]).toMatchObject({ turn_id: turnId, attempt: 1 });
    const textBetween = (from: number, to: number) =>
      all
        .slice(from, to)
        .filter((event) => event.type === 'text_delta')
        .map((event) => event.delta)
        .join('');
    const killedText = textBetween(firstStart, reset);
    expect(killedText.length).toBeGreaterThan(0);
    expect(expectedReply.startsWith(killedText)).toBe(true);
    expect(killedText.length).toBeLessThan(expectedReply.length);
    expect(textBetween(secondStart, all.length)).toBe(expectedReply);
    expect(all.slice(secondStart).some((event) => event.type === 'usage')).toBe(true);

    // A reconnect at the done's sequence gets nothing twice.
    const atDone = await SseClient.open(url2, sessionId, {
      lastEventId: String(dones[0].sequence),
    });
    streams.push(atDone);
    expect(atDone.status).toBe(200);
    await new Promise((resolveWait) => setTimeout(resolveWait, 500));
    expect(atDone.events).toEqual([]);
    atDone.close();

    const projection = await request(url2, 'GET', `/api/v1/chat/sessions/${sessionId}`);
    expect(projection.body).toMatchObject({
      state: 'idle',
      current_turn: null,
      latest_sequence: sequences.length,
    });

    // A graceful stop, then the whole journal is checked on the data directory itself.
    second.kill('SIGTERM');
    expect(await second.waitForExit()).toEqual({ code: 0, signal: null });
    expect(second.stdout).toContain('parley serve: SIGTERM received');
    const db = await openPglite(dataDir);
    try {
      await checkJournalInvariants(db);
      const session = await db.query<{
        lease_token: string | null;
        state: string;
        last_sequence: number;
      }>('select lease_token, state, last_sequence from sessions where session_id = $1', [
        sessionId,
      ]);
      expect(session.rows[0]).toEqual({
        lease_token: null,
        state: 'idle',
        last_sequence: sequences.length,
      });
      const replies = await db.query<{ content: string }>(
        `select content from messages where session_id = $1 and role = 'assistant'`,
        [sessionId],
      );
      expect(replies.rows).toEqual([{ content: expectedReply }]);
    } finally {
      await db.close();
    }
  }, 180_000);
});
