import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Checks whose answer must still hold when the action happens: the per-principal stream
// count (taken in one synchronous step, given back however the stream ends), and an
// execution's idempotency fingerprint (the same input whatever its key order). And the
// unblock route for clients that send no command_id.

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    limits: { streams_per_principal: 3 },
    missions: {
      report: { prompt: 'Write the report for {{region}}.' },
      watch: { prompt: 'Watch the feed.', loop_prompt: '/decide blocked' },
    },
  });
});
afterAll(async () => {
  await server?.close();
});

describe('limits.streams_per_principal under concurrent opens', () => {
  it('never lets more streams open than the cap, and every ending gives its slot back', async () => {
    const created = await request(server.url, 'POST', '/api/v1/chat/sessions', {});
    const path = `${server.url}/api/v1/chat/sessions/${created.body.session_id}/events`;
    // Requests refused after taking a slot (a cursor ahead, a missing session) give it back:
    // one after another, ten of them would exceed the cap of three if they did not.
    const refused: number[] = [];
    for (let index = 0; index < 10; index++) {
      const answer =
        index % 2 === 0
          ? await request(server.url, 'GET', `${new URL(path).pathname}?after=999`)
          : await request(server.url, 'GET', '/api/v1/chat/sessions/nope/events');
      refused.push(answer.status);
    }
    expect(refused).toEqual([409, 404, 409, 404, 409, 404, 409, 404, 409, 404]);

    const controllers = Array.from({ length: 30 }, () => new AbortController());
    const answers = await Promise.all(
      controllers.map((controller) => fetch(path, { signal: controller.signal })),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(3);
    expect(statuses.filter((status) => status === 429)).toHaveLength(27);
    for (const controller of controllers) controller.abort();

    // Once the aborted streams are closed, the whole cap is free again (no slot leaked).
    await until(
      async () => {
        const again = new AbortController();
        const opened = await Promise.all(
          [0, 1, 2].map(() => fetch(path, { signal: again.signal }).catch(() => null)),
        );
        again.abort();
        return opened.map((answer) => answer?.status ?? 0);
      },
      (opened) => opened.every((status) => status === 200),
      'three free slots',
    );
  });
});

describe('an execution dispatch fingerprint', () => {
  it('is the same dispatch when the input has its keys in another order', async () => {
    const path = '/api/v1/missions/report/executions';
    const first = await request(server.url, 'POST', path, {
      execution_id: 'canonical_1',
      input: { region: 'north', options: { depth: 2, tags: ['a', 'b'] } },
    });
    expect(first.status).toBe(202);
    const reordered = await request(server.url, 'POST', path, {
      input: { options: { tags: ['a', 'b'], depth: 2 }, region: 'north' },
      execution_id: 'canonical_1',
    });
    expect(reordered.status).toBe(202);
    expect(reordered.body.session_id).toBe(first.body.session_id);
    // Another value is still another dispatch; an array's order is part of its value.
    const changed = await request(server.url, 'POST', path, {
      execution_id: 'canonical_1',
      input: { region: 'north', options: { depth: 2, tags: ['b', 'a'] } },
    });
    expect(changed.status).toBe(409);
    expect(changed.body.error).toBe('execution_conflict');
  });

  it('still matches a row dispatched before fingerprints were canonical, spelled the same', async () => {
    const path = '/api/v1/missions/report/executions';
    const input = { region: 'south', zone: 'b' };
    const first = await request(server.url, 'POST', path, { execution_id: 'legacy_1', input });
    expect(first.status).toBe(202);
    // What the previous version stored: the hash of the dispatch as it was spelled.
    const legacy = createHash('sha256')
      .update(JSON.stringify(['report', 'default', input, null, 1, null]))
      .digest('hex');
    await server.db.query(
      `update executions set fingerprint = $1 where tenant = 'default' and execution_id = $2`,
      [legacy, 'legacy_1'],
    );
    const retried = await request(server.url, 'POST', path, { execution_id: 'legacy_1', input });
    expect(retried.status).toBe(202);
    expect(retried.body.session_id).toBe(first.body.session_id);
    const other = await request(server.url, 'POST', path, {
      execution_id: 'legacy_1',
      input: { region: 'west', zone: 'b' },
    });
    expect(other.status).toBe(409);
  });
});

describe('an unblock without command_id', () => {
  it('is answered as before, recorded under a command id the server made', async () => {
    const dispatched = await request(server.url, 'POST', '/api/v1/missions/watch/executions', {
      execution_id: 'no_command_1',
    });
    expect(dispatched.status).toBe(202);
    await until(
      async () => (await request(server.url, 'GET', '/api/v1/executions/no_command_1')).body,
      (execution) => execution.status === 'blocked',
      'the loop to block',
    );
    const unblocked = await request(server.url, 'POST', '/api/v1/executions/no_command_1/unblock', {
      note: 'go on',
    });
    expect(unblocked.status).toBe(200);
    expect(unblocked.body).toEqual({ result: 'unblocked', status: 'waiting' });
    const commands = await server.db.query<{ command_id: string; kind: string }>(
      `select command_id, kind from execution_commands
        where tenant = 'default' and execution_id = 'no_command_1'`,
    );
    expect(commands.rows).toHaveLength(1);
    expect(commands.rows[0]).toMatchObject({ kind: 'unblock' });
    expect(commands.rows[0]?.command_id).toMatch(/^unblock_[0-9A-Z]{26}$/);
  });
});
