import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPglite } from '../src/store/pglite.js';
import { A2aRemote } from './support/a2aRemote.js';
import { checkJournalInvariants } from './support/invariants.js';
import { until } from './support/poll.js';
import { startParley, stopAllProcesses } from './support/processes.js';
import { request } from './support/server.js';
import { copyPgliteTemplate } from './support/template.js';

// The `a2a` tool kind across a crash (docs/tools.md, "A2A agents"): `parley serve` on
// embedded storage calls a remote agent built with `@a2a-js/sdk`'s own server, which does
// not dedupe message ids and keeps its task working. Parley is SIGKILLed while it follows
// the remote task, then restarted on the same data directory: the call resumes from its
// receipt — the remote task's id — and follows that task; the message is sent once.

const env = { PARLEY_LEASE_TTL_MS: '600000' };

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await stopAllProcesses();
  for (const clean of cleanup.splice(0)) await clean();
});

describe('the a2a tool when parley serve (PGlite) is killed while the remote task runs', () => {
  it('follows the recorded remote task after the restart: the message is sent once', async () => {
    const remote = await A2aRemote.start();
    cleanup.push(() => remote.close());
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-a2a-crash-'));
    copyPgliteTemplate(dataDir);
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const config = {
      runtime: { poll_ms: 200, shutdown_grace_ms: 2000 },
      agents: {
        front: {
          model: 'demo/echo',
          tools: { billing: { a2a: remote.cardUrl, policy: 'allow', timeout_ms: 60_000 } },
        },
      },
    };

    const first = await startParley('serve', { dataDir, env, config });
    const admitted = await request(first.url as string, 'POST', '/api/v1/chat/turns', {
      turn_id: 'turn_a2a_crash',
      agent: 'front',
      message: '/tool billing {"message": "charge the card once"}',
    });
    expect(admitted.status).toBe(202);
    const sessionId: string = admitted.body.session_id;

    // The tool follows the remote task (GetTask) only once its receipt is saved.
    await remote.waitForMessages(1);
    await until(() => remote.methods.includes('GetTask'), Boolean, 'the tool following the task');
    first.kill('SIGKILL');
    expect(await first.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
    const polledBefore = remote.methods.length;

    const second = await startParley('serve', { dataDir, env, config });
    await until(
      () => remote.methods.length > polledBefore,
      Boolean,
      'the resumed call reaching the remote',
    );
    remote.release();
    await until(
      () => request(second.url as string, 'GET', `/api/v1/chat/sessions/${sessionId}`),
      (session) => session.body.state === 'idle' && session.body.current_turn === null,
      'the turn to end',
    );

    expect(remote.received).toEqual(['charge the card once']);
    expect(remote.methods.filter((method) => method === 'SendMessage')).toHaveLength(1);
    expect(remote.methods.slice(polledBefore)).not.toContain('SendMessage');

    await stopAllProcesses();
    const db = await openPglite(dataDir);
    try {
      await checkJournalInvariants(db);
      const results = await db.query<{ payload: { ok: boolean; result?: { reply?: string } } }>(
        `select payload from events where session_id = $1 and type = 'tool_result'`,
        [sessionId],
      );
      expect(results.rows.map((row) => row.payload)).toEqual([
        expect.objectContaining({
          ok: true,
          result: expect.objectContaining({
            state: 'completed',
            reply: 'done: charge the card once',
          }),
        }),
      ]);
    } finally {
      await db.close();
    }
  });
});
