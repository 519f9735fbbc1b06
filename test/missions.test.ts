import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Missions and executions (issue 10) end to end on one in-process `parley serve`, on the
// engine of this leg: every iteration is an ordinary turn in the execution's session, the
// demo model plays the agent and the evaluator (`/decide` in the loop prompt).
let server: TestServer;
let counter = 0;

beforeAll(async () => {
  server = await startTestServer({
    runtime: { execution_recheck_ms: 300 },
    agents: { default: { tools: { calculator: 'approve' } }, second: {} },
    missions: {
      once: { prompt: 'Write the report.' },
      looping: { prompt: 'Tidy the inbox.', loop_prompt: 'Is it tidy? /decide continue:3' },
      blocking: { prompt: 'Deploy.', loop_prompt: 'Can it go on? /decide blocked' },
      endless: { prompt: 'Count.', loop_prompt: '/decide continue', max_iterations: 2 },
      confused: { prompt: 'Think.', loop_prompt: '/decide garbage' },
      flaky: { prompt: 'Check.', loop_prompt: '/fail transient 1\n/decide complete' },
      delayed: {
        prompt: 'Poll the feed.',
        loop_prompt: '/decide continue:5',
        loop_delay_seconds: 3600,
      },
      approval: { prompt: '/tool calculator {"expression": "6*7"}', timeout_seconds: 1 },
      asking: { prompt: '/tool calculator {"expression": "6*7"}' },
      research: { prompt: 'Research {{topic}}.' },
      typed: {
        prompt: 'Report on {{region}}.',
        input_schema: {
          type: 'object',
          properties: { region: { type: 'string', enum: ['eu', 'us'] } },
          required: ['region'],
          additionalProperties: false,
        },
      },
    },
  });
});
afterAll(async () => {
  await server.close();
});

const nextId = () => `x_${counter++}`;

function dispatch(mission: string, body: Record<string, unknown> = {}) {
  return request(server.url, 'POST', `/api/v1/missions/${mission}/executions`, {
    execution_id: nextId(),
    ...body,
  });
}

const show = (id: string) => request(server.url, 'GET', `/api/v1/executions/${id}`);

async function untilStatus(id: string, statuses: string[]): Promise<any> {
  return (
    await until(
      () => show(id),
      (response) => statuses.includes(response.body.status),
      `execution ${id} to be ${statuses.join(' or ')}`,
    )
  ).body;
}

async function journal(sessionId: string): Promise<any[]> {
  // Every event so far: the SSE replay is the public path, the store read is the same.
  const { readEvents } = await import('../src/store/readEvents.js');
  return readEvents(server.db, sessionId, 0, 10_000);
}

describe('executions', () => {
  it('runs a one-shot mission to success, answered by an ordinary turn', async () => {
    const dispatched = await dispatch('once');
    expect(dispatched.status).toBe(202);
    expect(Object.keys(dispatched.body).sort()).toEqual(
      [
        'execution_id',
        'mission',
        'agent',
        'user',
        'session_id',
        'workspace_id',
        'status',
        'loop_status',
        'iteration',
        'max_iterations',
        'next_run_at',
        'loop_decision',
        'result',
        'created_at',
        'updated_at',
      ].sort(),
    );
    expect(dispatched.body).toMatchObject({
      mission: 'once',
      agent: 'default',
      user: 'local',
      status: 'starting',
      loop_status: null,
      iteration: 0,
    });
    const done = await untilStatus(dispatched.body.execution_id, ['success']);
    expect(done.result).toEqual({ content: 'You said: Write the report.' });
    expect(done.iteration).toBe(1);

    // The execution's session holds one ordinary turn and the execution's own events.
    const events = await journal(done.session_id);
    const turnIds = events.filter((event) => event.type === 'done').map((event) => event.turn_ids);
    expect(turnIds).toEqual([[`exec.${done.execution_id}.1`]]);
    const statuses = events
      .filter((event) => event.type === 'execution_status')
      .map((event) => event.status);
    expect(statuses).toEqual(['starting', 'running', 'success']);
    expect(events.at(-1)).toMatchObject({ type: 'execution_status', status: 'success' });

    // A retry of the dispatch is the same execution; other input is a conflict.
    const retry = await request(server.url, 'POST', '/api/v1/missions/once/executions', {
      execution_id: done.execution_id,
    });
    expect(retry.status).toBe(202);
    expect(retry.body.session_id).toBe(done.session_id);
    const conflict = await request(server.url, 'POST', '/api/v1/missions/once/executions', {
      execution_id: done.execution_id,
      input: { other: true },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error).toBe('execution_conflict');
  });

  it('continues a loop twice, then completes on the evaluation', async () => {
    const { body } = await dispatch('looping');
    expect(body.loop_status).toBe('idle');
    const done = await untilStatus(body.execution_id, ['success', 'error']);
    expect(done).toMatchObject({
      status: 'success',
      loop_status: 'completed',
      iteration: 3,
      loop_decision: { decision: 'complete', iteration: 3 },
    });
    const events = await journal(done.session_id);
    const decisions = events
      .filter((event) => event.type === 'execution_status' && event.loop_decision)
      .map((event) => `${event.loop_decision.iteration}:${event.loop_decision.decision}`);
    expect([...new Set(decisions)]).toEqual(['1:continue', '2:continue', '3:complete']);
    // Iteration 2 continues the same session: three turns, one per iteration.
    const dones = events.filter((event) => event.type === 'done');
    expect(dones.map((event) => event.turn_ids[0])).toEqual(
      [1, 2, 3].map((n) => `exec.${done.execution_id}.${n}`),
    );
    expect(dones[1].final_message.content).toContain('iteration 2 of 10');
  });

  it('blocks on the evaluation and waits for a person, who unblocks it', async () => {
    const { body } = await dispatch('blocking');
    const blocked = await untilStatus(body.execution_id, ['blocked']);
    expect(blocked).toMatchObject({ loop_status: 'blocked', iteration: 1, next_run_at: null });

    const unblock = (note?: string, commandId = `unblock_${body.execution_id}`) =>
      request(server.url, 'POST', `/api/v1/executions/${body.execution_id}/unblock`, {
        command_id: commandId,
        ...(note === undefined ? {} : { note }),
      });
    const answered = await unblock('the key is in place /decide complete');
    expect(answered.status).toBe(200);
    expect(answered.body).toEqual({ result: 'unblocked', status: 'waiting' });
    expect((await unblock('again')).body.result).toBe('duplicate');

    const done = await untilStatus(body.execution_id, ['success', 'error']);
    expect(done).toMatchObject({ status: 'success', loop_status: 'completed', iteration: 2 });
    const dones = (await journal(done.session_id)).filter((event) => event.type === 'done');
    expect(dones[1].final_message.content).toContain('the key is in place');
    // Only a blocked execution can be unblocked.
    const late = await unblock('late', `unblock_late_${body.execution_id}`);
    expect(late.body).toMatchObject({ result: 'too_late' });
    const running = await dispatch('delayed');
    await untilStatus(running.body.execution_id, ['waiting']);
    const notBlocked = await request(
      server.url,
      'POST',
      `/api/v1/executions/${running.body.execution_id}/unblock`,
      { command_id: `u_${running.body.execution_id}` },
    );
    expect(notBlocked.status).toBe(409);
    expect(notBlocked.body.error).toBe('execution_not_blocked');
  });

  it('stops at max_iterations with limit_reached', async () => {
    const { body } = await dispatch('endless');
    const done = await untilStatus(body.execution_id, ['limit_reached', 'success', 'error']);
    expect(done).toMatchObject({
      status: 'limit_reached',
      loop_status: 'limit_reached',
      iteration: 2,
      max_iterations: 2,
      loop_decision: { decision: 'continue', iteration: 2 },
    });
  });

  it('retries an evaluation outside the schema once, then fails', async () => {
    const { body } = await dispatch('confused');
    const done = await untilStatus(body.execution_id, ['error', 'success']);
    expect(done).toMatchObject({ status: 'error', loop_status: 'failed', iteration: 1 });
    expect(done.result.error.code).toBe('evaluation_failed');
    const usage = await server.db.query<{ purpose: string; outcome: string }>(
      `select purpose, outcome from usage where session_id = $1 and purpose = 'evaluation'`,
      [done.session_id],
    );
    expect(usage.rows).toEqual([
      { purpose: 'evaluation', outcome: 'failed' },
      { purpose: 'evaluation', outcome: 'failed' },
    ]);
  });

  it('retries an evaluation the provider failed transiently, with backoff', async () => {
    const { body } = await dispatch('flaky');
    const done = await untilStatus(body.execution_id, ['error', 'success']);
    expect(done).toMatchObject({
      status: 'success',
      loop_status: 'completed',
      loop_decision: { decision: 'complete', iteration: 1 },
    });
    // The failed call reported no usage; the retry is billed once.
    const usage = await server.db.query<{ purpose: string; outcome: string }>(
      `select purpose, outcome from usage where session_id = $1 and purpose = 'evaluation'`,
      [done.session_id],
    );
    expect(usage.rows).toEqual([{ purpose: 'evaluation', outcome: 'ok' }]);
  });

  it('ends with timeout, cancelling the turn that waits for an approval', async () => {
    const { body } = await dispatch('approval');
    const done = await untilStatus(body.execution_id, ['timeout', 'success', 'error']);
    expect(done.status).toBe('timeout');
    expect(done.result.error.code).toBe('timeout');
    // The turn is cancelled through the ordinary cancel: its request expires.
    const events = await until(
      () => journal(done.session_id),
      (found) => found.some((event) => event.type === 'cancelled'),
      'the turn to be cancelled',
    );
    expect(events.find((event) => event.type === 'input_resolved')).toMatchObject({
      expired: 'cancelled',
    });
  });

  it('cancels the next iteration too when a step admitted it but had not counted it', async () => {
    const { body } = await dispatch('asking');
    // Running its first iteration, or already `interrupted` by that turn's approval.
    const running = await untilStatus(body.execution_id, ['running', 'interrupted']);
    expect(running.iteration).toBe(1);
    const sessionId = running.session_id as string;
    await until(
      () => journal(sessionId),
      (found) => found.some((event) => event.type === 'input_required'),
      'the first iteration to ask for an approval',
    );
    // A step admits the next iteration, then saves it; it died in between (the row still
    // says iteration 1) and the execution is cancelled now.
    const { admitTurn } = await import('../src/store/admitTurn.js');
    const { trustedViewer } = await import('../src/store/visibility.js');
    const next = `exec.${body.execution_id}.2`;
    await admitTurn(server.db, {
      tenant: 'default',
      author: 'local',
      viewer: trustedViewer,
      turnId: next,
      sessionId,
      agent: null,
      defaultAgent: 'default',
      greetings: new Map([['default', null]]),
      visibilities: new Map([['default', 'tenant']]),
      message: '/tool calculator {"expression": "1+1"}',
      option: null,
      attachments: [],
      triggers: new Map([['default', true]]),
      pendingInput: new Map([['default', 'queue']]),
    });
    const cancel = await request(
      server.url,
      'POST',
      `/api/v1/executions/${body.execution_id}/cancel`,
      { command_id: `cancel_${body.execution_id}` },
    );
    expect(cancel.status).toBe(200);
    const cancelled = await untilStatus(body.execution_id, ['cancelled']);
    // The admitted turn is counted: the row never says fewer iterations than its turns.
    expect(cancelled.iteration).toBe(2);
    const events = await until(
      () => journal(sessionId),
      (found) => found.some((event) => event.type === 'cancelled' && event.turn_ids.includes(next)),
      'the uncounted iteration to be cancelled too',
    );
    expect(events.some((event) => event.type === 'done' && event.turn_ids.includes(next))).toBe(
      false,
    );
  });

  it('cancels while waiting for the delay, durably and idempotently', async () => {
    const { body } = await dispatch('delayed');
    const waiting = await untilStatus(body.execution_id, ['waiting']);
    expect(waiting.loop_status).toBe('idle');
    expect(Date.parse(waiting.next_run_at) - Date.now()).toBeGreaterThan(3_000_000);
    const cancel = () =>
      request(server.url, 'POST', `/api/v1/executions/${body.execution_id}/cancel`, {
        command_id: `cancel_${body.execution_id}`,
      });
    const first = await cancel();
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ result: 'cancelled', status: 'cancelled' });
    expect((await cancel()).body).toEqual({ result: 'duplicate', status: 'cancelled' });
    const shown = (await show(body.execution_id)).body;
    expect(shown).toMatchObject({ status: 'cancelled', loop_status: 'idle', next_run_at: null });
    const row = await server.db.query<{ next_run_at: Date | null }>(
      'select next_run_at from executions where execution_id = $1',
      [body.execution_id],
    );
    expect(row.rows[0]?.next_run_at).toBeNull();
    // The same command_id for another execution is a conflict.
    const other = await dispatch('delayed');
    const reused = await request(
      server.url,
      'POST',
      `/api/v1/executions/${other.body.execution_id}/cancel`,
      { command_id: `cancel_${body.execution_id}` },
    );
    expect(reused.status).toBe(409);
    expect(reused.body.error).toBe('command_conflict');
  });

  it('fills the prompt from a validated input, and refuses bad input writing nothing', async () => {
    const { body } = await dispatch('typed', { input: { region: 'eu' } });
    const done = await untilStatus(body.execution_id, ['success']);
    expect(done.result.content).toBe('You said: Report on eu.');

    const before = await server.db.query<{ count: number }>(
      'select count(*)::int as count from executions',
    );
    const bad = [
      ['typed', { input: { region: 'mars' } }, 400, 'invalid_input'],
      ['typed', { input: {} }, 400, 'invalid_input'],
      ['typed', { input: 'eu' }, 400, 'invalid_request'],
      ['typed', { execution_id: 'has space' }, 400, 'invalid_request'],
      ['typed', { agent: 'nobody', input: { region: 'eu' } }, 404, 'unknown_agent'],
      ['nothing', {}, 404, 'mission_not_found'],
      ['typed', { input: { region: 'eu' }, surprise: 1 }, 400, 'invalid_request'],
    ] as const;
    for (const [mission, extra, status, code] of bad) {
      const answer = await dispatch(mission, extra);
      expect(answer.status, JSON.stringify(extra)).toBe(status);
      expect(answer.body.error).toBe(code);
    }
    const after = await server.db.query<{ count: number }>(
      'select count(*)::int as count from executions',
    );
    expect(after.rows[0]?.count).toBe(before.rows[0]?.count);
  });

  it('fans out one session per thread and gathers their results', async () => {
    const { body } = await dispatch('research', {
      input: { topic: 'tides' },
      threads: [{}, { agent: 'second', input: { topic: 'winds' } }],
    });
    const done = await untilStatus(body.execution_id, ['success', 'error']);
    expect(done.status).toBe('success');
    const threads = done.result.threads;
    expect(
      threads.map((thread: any) => [thread.execution_id, thread.agent, thread.status]),
    ).toEqual([
      [`${body.execution_id}.1`, 'default', 'success'],
      [`${body.execution_id}.2`, 'second', 'success'],
    ]);
    expect(threads.map((thread: any) => thread.result.content)).toEqual([
      'You said: Research tides.',
      'You said: Research winds.',
    ]);
    // Each thread ran in a session of its own; each is an execution of its own.
    expect(
      new Set([done.session_id, ...threads.map((thread: any) => thread.session_id)]).size,
    ).toBe(3);
    expect((await show(`${body.execution_id}.2`)).body.agent).toBe('second');

    // Cancelling a fan-out cancels its threads.
    const slow = await dispatch('delayed', { threads: [{}, {}] });
    await untilStatus(`${slow.body.execution_id}.1`, ['waiting']);
    await untilStatus(`${slow.body.execution_id}.2`, ['waiting']);
    const cancelled = await request(
      server.url,
      'POST',
      `/api/v1/executions/${slow.body.execution_id}/cancel`,
      { command_id: `cancel_${slow.body.execution_id}` },
    );
    expect(cancelled.body.result).toBe('cancelled');
    await untilStatus(slow.body.execution_id, ['cancelled']);
    await untilStatus(`${slow.body.execution_id}.1`, ['cancelled']);
    await untilStatus(`${slow.body.execution_id}.2`, ['cancelled']);
  });

  it('lists executions with filters and a cursor', async () => {
    const all = (await request(server.url, 'GET', '/api/v1/executions?limit=200')).body.items;
    expect(all.length).toBeGreaterThan(5);
    const byMission = await request(server.url, 'GET', '/api/v1/executions?mission=once');
    expect(byMission.body.items.every((item: any) => item.mission === 'once')).toBe(true);
    const bySuccess = await request(
      server.url,
      'GET',
      '/api/v1/executions?status=success&user=local',
    );
    expect(bySuccess.body.items.length).toBeGreaterThan(0);
    expect(bySuccess.body.items.every((item: any) => item.status === 'success')).toBe(true);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await request(
        server.url,
        'GET',
        `/api/v1/executions?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.body.items.map((item: any) => item.execution_id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.map((item: any) => item.execution_id));
    for (const query of ['status=bogus', 'cursor=nonsense', 'limit=0']) {
      const answer = await request(server.url, 'GET', `/api/v1/executions?${query}`);
      expect(answer.status, query).toBe(400);
    }
    expect((await show('missing_one')).status).toBe(404);
    expect((await show('missing_one')).body.error).toBe('execution_not_found');
  });

  it('documents the routes of issue 10 in the OpenAPI document', async () => {
    const document = (await request(server.url, 'GET', '/api/v1/openapi.json')).body;
    for (const path of [
      '/api/v1/missions',
      '/api/v1/missions/{name}',
      '/api/v1/missions/{name}/executions',
      '/api/v1/executions',
      '/api/v1/executions/{execution_id}',
      '/api/v1/executions/{execution_id}/cancel',
      '/api/v1/executions/{execution_id}/unblock',
      '/api/v1/schedules',
      '/api/v1/chat/sessions/{session_id}/checkpoints',
      '/api/v1/chat/sessions/{session_id}/fork',
      '/api/v1/chat/sessions/{session_id}/rewind',
      '/api/v1/agents/{name}',
      '/api/v1/agents/{name}/personal',
      '/api/v1/agents/{name}/personal/archive',
    ]) {
      expect(document.paths[path], path).toBeDefined();
    }
    expect(document.components.schemas.Execution.required).toHaveLength(15);
    expect(document.components.schemas.Error.properties.error.enum).toContain('execution_conflict');
  });
});
