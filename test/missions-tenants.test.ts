import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Tenant isolation for every endpoint of issue 10: another tenant's execution, session,
// mission or schedule answers exactly like a missing one (same status, same code) and is
// never listed; nothing of it is written.
let server: TestServer;
const keys = { K_ACME: 'acme-key', K_GLOBEX: 'globex-key' };
const acme = { authorization: 'Bearer acme-key' };
const globex = { authorization: 'Bearer globex-key' };
let executionId = '';
let sessionId = '';
let checkpoint = 0;

beforeAll(async () => {
  server = await startTestServer(
    {
      runtime: { execution_recheck_ms: 300 },
      auth: {
        keys: [
          { key_env: 'K_ACME', tenant: 'acme', user: 'ann', roles: ['admin'] },
          { key_env: 'K_GLOBEX', tenant: 'globex', user: 'ann', roles: ['admin'] },
        ],
      },
      missions: {
        blocking: { prompt: 'Deploy.', loop_prompt: '/decide blocked' },
      },
      schedules: { acme_nightly: { mission: 'blocking', cron: '0 3 * * *', tenant: 'acme' } },
    },
    keys,
  );
  const dispatched = await request(
    server.url,
    'POST',
    '/api/v1/missions/blocking/executions',
    { execution_id: 'acme_exec' },
    acme,
  );
  executionId = dispatched.body.execution_id;
  sessionId = dispatched.body.session_id;
  await until(
    () => request(server.url, 'GET', `/api/v1/executions/${executionId}`, undefined, acme),
    (answer) => answer.body.status === 'blocked',
    'the execution to block',
  );
  const checkpoints = await request(
    server.url,
    'GET',
    `/api/v1/chat/sessions/${sessionId}/checkpoints`,
    undefined,
    acme,
  );
  checkpoint = checkpoints.body.items[0].sequence;
});
afterAll(async () => {
  await server.close();
});

/** The foreign answer equals the answer for a resource that does not exist at all. */
async function sameAsMissing(
  method: string,
  foreignPath: string,
  missingPath: string,
  body?: unknown,
): Promise<void> {
  const foreign = await request(server.url, method, foreignPath, body, globex);
  const missing = await request(server.url, method, missingPath, body, globex);
  expect(foreign.status, `${method} ${foreignPath}`).toBe(404);
  expect(foreign.status).toBe(missing.status);
  expect(foreign.body.error).toBe(missing.body.error);
}

describe('tenant isolation of missions, executions, schedules, checkpoints', () => {
  it('hides executions', async () => {
    await sameAsMissing('GET', `/api/v1/executions/${executionId}`, '/api/v1/executions/nope');
    await sameAsMissing(
      'POST',
      `/api/v1/executions/${executionId}/cancel`,
      '/api/v1/executions/nope/cancel',
      { command_id: 'c1' },
    );
    await sameAsMissing(
      'POST',
      `/api/v1/executions/${executionId}/unblock`,
      '/api/v1/executions/nope/unblock',
      { command_id: 'u1' },
    );
    const listed = await request(server.url, 'GET', '/api/v1/executions', undefined, globex);
    expect(listed.body.items).toEqual([]);
    // Nothing was written for globex: the execution is still blocked, with no commands.
    const mine = await request(
      server.url,
      'GET',
      `/api/v1/executions/${executionId}`,
      undefined,
      acme,
    );
    expect(mine.body.status).toBe('blocked');
    const commands = await server.db.query('select 1 from execution_commands');
    expect(commands.rowCount).toBe(0);
    // The same execution_id in another tenant is another execution.
    const theirs = await request(
      server.url,
      'POST',
      '/api/v1/missions/blocking/executions',
      { execution_id: executionId },
      globex,
    );
    expect(theirs.status).toBe(202);
    expect(theirs.body.session_id).not.toBe(sessionId);
  });

  it("hides a tenant's own missions, and lists only the tenant's schedules", async () => {
    const created = await request(
      server.url,
      'PUT',
      '/api/v1/missions/private',
      { prompt: 'Mine.' },
      acme,
    );
    expect(created.status).toBe(200);
    await sameAsMissing(
      'POST',
      '/api/v1/missions/private/executions',
      '/api/v1/missions/nothing/executions',
      { execution_id: 'x1' },
    );
    await sameAsMissing('GET', '/api/v1/missions/private', '/api/v1/missions/nothing');
    await sameAsMissing('DELETE', '/api/v1/missions/private', '/api/v1/missions/nothing');
    const theirMissions = await request(server.url, 'GET', '/api/v1/missions', undefined, globex);
    expect(theirMissions.body.items.map((item: any) => item.name)).toEqual(['blocking']);
    const theirSchedules = await request(server.url, 'GET', '/api/v1/schedules', undefined, globex);
    expect(theirSchedules.body.items).toEqual([]);
    const mySchedules = await request(server.url, 'GET', '/api/v1/schedules', undefined, acme);
    expect(mySchedules.body.items.map((item: any) => item.name)).toEqual(['acme_nightly']);
  });

  it('hides sessions from checkpoints, fork and rewind', async () => {
    await sameAsMissing(
      'GET',
      `/api/v1/chat/sessions/${sessionId}/checkpoints`,
      '/api/v1/chat/sessions/nope/checkpoints',
    );
    await sameAsMissing(
      'POST',
      `/api/v1/chat/sessions/${sessionId}/fork`,
      '/api/v1/chat/sessions/nope/fork',
      { at_sequence: checkpoint },
    );
    await sameAsMissing(
      'POST',
      `/api/v1/chat/sessions/${sessionId}/rewind`,
      '/api/v1/chat/sessions/nope/rewind',
      { to_sequence: checkpoint },
    );
    const events = await server.db.query(
      `select type from events where session_id = $1 and type in ('forked', 'rewound')`,
      [sessionId],
    );
    expect(events.rowCount).toBe(0);
  });
});
