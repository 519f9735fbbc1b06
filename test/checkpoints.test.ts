import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// Checkpoints, fork and rewind (issue 10). The demo model counts every word of its prompt
// as an input token, so a turn's `usage` tells how much history its prompt carried.
let server: TestServer;
let counter = 0;

beforeAll(async () => {
  server = await startTestServer({ agents: { default: { tools: { calculator: 'approve' } } } });
});
afterAll(async () => {
  await server.close();
});

/** Admits a turn and waits for its `done`; returns the input tokens of its model call. */
async function turn(
  sessionId: string | null,
  message: string,
): Promise<{ sessionId: string; inputTokens: number }> {
  const turnId = `cp_${counter++}`;
  const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
    turn_id: turnId,
    message,
    ...(sessionId ? { session_id: sessionId } : {}),
  });
  expect(admitted.status).toBe(202);
  const id = admitted.body.session_id as string;
  const { readEvents } = await import('../src/store/readEvents.js');
  const events = await until(
    () => readEvents(server.db, id, 0, 10_000),
    (found) => found.some((event: any) => event.type === 'done' && event.turn_ids.includes(turnId)),
    `turn ${turnId}`,
  );
  const usage = events.filter((event: any) => event.type === 'usage' && event.turn_id === turnId);
  return { sessionId: id, inputTokens: (usage.at(-1) as any).input_tokens };
}

const checkpoints = async (sessionId: string, query = '') =>
  request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}/checkpoints${query}`);

describe('checkpoints, fork and rewind', () => {
  it('lists every done as a checkpoint with its transcript position and usage so far', async () => {
    const { sessionId } = await turn(null, 'alpha');
    await turn(sessionId, 'beta');
    await turn(sessionId, 'gamma');
    const listed = await checkpoints(sessionId);
    expect(listed.status).toBe(200);
    const items = listed.body.items;
    expect(items.map((item: any) => item.transcript_position)).toEqual([2, 4, 6]);
    expect(items.map((item: any) => item.turn_ids.length)).toEqual([1, 1, 1]);
    expect(items.every((item: any) => item.rewound === false)).toBe(true);
    const tokens = items.map((item: any) => item.usage.input_tokens);
    expect(tokens[0]).toBeGreaterThan(0);
    expect(tokens[1]).toBeGreaterThan(tokens[0]);
    expect(tokens[2]).toBeGreaterThan(tokens[1]);
    const paged = await checkpoints(sessionId, '?limit=2');
    expect(paged.body.items).toHaveLength(2);
    const rest = await checkpoints(sessionId, `?cursor=${paged.body.next_cursor}`);
    expect(rest.body.items.map((item: any) => item.sequence)).toEqual([items[2].sequence]);
    expect((await checkpoints(sessionId, '?cursor=abc')).status).toBe(400);
  });

  it('forks at a checkpoint: the new session answers from the shorter history', async () => {
    const { sessionId } = await turn(null, 'alpha');
    await turn(sessionId, 'beta');
    await turn(sessionId, 'gamma');
    const [first] = (await checkpoints(sessionId)).body.items;

    const forked = await request(server.url, 'POST', `/api/v1/chat/sessions/${sessionId}/fork`, {
      at_sequence: first.sequence,
    });
    expect(forked.status).toBe(201);
    const forkId = forked.body.session_id as string;
    expect(forkId).not.toBe(sessionId);
    const transcript = await request(server.url, 'GET', `/api/v1/chat/sessions/${forkId}/messages`);
    expect(transcript.body.items.map((item: any) => item.content).reverse()).toEqual([
      'alpha',
      'You said: alpha',
    ]);

    // The same message in both: the original's prompt also carries beta and gamma with
    // their replies (four words more each way: "beta", "You said: beta", ...).
    const inOriginal = await turn(sessionId, 'delta');
    const inFork = await turn(forkId, 'delta');
    expect(inOriginal.inputTokens - inFork.inputTokens).toBe(8);

    // Journaled in both sessions.
    const { readEvents } = await import('../src/store/readEvents.js');
    const originalEvents = await readEvents(server.db, sessionId, 0, 1000);
    expect(originalEvents.find((event) => event.type === 'forked')).toMatchObject({
      from_session_id: sessionId,
      to_session_id: forkId,
      at_sequence: first.sequence,
      actor: { user: 'local', tenant: 'default' },
    });
    const forkEvents = await readEvents(server.db, forkId, 0, 1000);
    expect(forkEvents.map((event) => event.type).slice(0, 3)).toEqual([
      'message',
      'message',
      'forked',
    ]);

    const notCheckpoint = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/fork`,
      {
        at_sequence: 1,
      },
    );
    expect(notCheckpoint.status).toBe(404);
    expect(notCheckpoint.body.error).toBe('checkpoint_not_found');
  });

  it('rewinds: the next turn starts from the checkpoint, nothing is deleted', async () => {
    const { sessionId } = await turn(null, 'alpha');
    await turn(sessionId, 'beta');
    await turn(sessionId, 'gamma');
    const [first, second] = (await checkpoints(sessionId)).body.items;
    const fork = await request(server.url, 'POST', `/api/v1/chat/sessions/${sessionId}/fork`, {
      at_sequence: first.sequence,
    });

    const rewound = await request(server.url, 'POST', `/api/v1/chat/sessions/${sessionId}/rewind`, {
      to_sequence: first.sequence,
    });
    expect(rewound.status).toBe(200);
    expect(rewound.body).toMatchObject({ session_id: sessionId, to_sequence: first.sequence });

    // After the rewind the session answers exactly like the fork at the same checkpoint.
    const inRewound = await turn(sessionId, 'epsilon');
    const inFork = await turn(fork.body.session_id, 'epsilon');
    expect(inRewound.inputTokens).toBe(inFork.inputTokens);

    const listed = (await checkpoints(sessionId)).body.items;
    expect(listed.map((item: any) => item.rewound)).toEqual([false, true, true, false]);
    const transcript = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}/messages`,
    );
    expect(transcript.body.items).toHaveLength(8);

    // A rewound-away checkpoint can be forked, not rewound to.
    const back = await request(server.url, 'POST', `/api/v1/chat/sessions/${sessionId}/rewind`, {
      to_sequence: second.sequence,
    });
    expect(back.status).toBe(404);
    expect(back.body.error).toBe('checkpoint_not_found');
    const forkRewound = await request(
      server.url,
      'POST',
      `/api/v1/chat/sessions/${sessionId}/fork`,
      {
        at_sequence: second.sequence,
      },
    );
    expect(forkRewound.status).toBe(201);
  });

  it('refuses a rewind while a turn is not finished, and bad input', async () => {
    const { sessionId } = await turn(null, 'alpha');
    const [first] = (await checkpoints(sessionId)).body.items;
    await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: `cp_busy_${counter++}`,
      session_id: sessionId,
      message: '/tool calculator {"expression": "1+1"}',
    });
    await until(
      () => request(server.url, 'GET', `/api/v1/chat/sessions/${sessionId}`),
      (answer) => answer.body.state === 'input_required',
      'the approval request',
    );
    const answer = await request(server.url, 'POST', `/api/v1/chat/sessions/${sessionId}/rewind`, {
      to_sequence: first.sequence,
    });
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({ error: 'session_busy', state: 'input_required' });
    for (const body of [{}, { to_sequence: 'one' }, { to_sequence: 0 }, { to_sequence: 1, x: 1 }]) {
      const bad = await request(
        server.url,
        'POST',
        `/api/v1/chat/sessions/${sessionId}/rewind`,
        body,
      );
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    expect(
      (await request(server.url, 'POST', '/api/v1/chat/sessions/nope/fork', { at_sequence: 2 }))
        .body.error,
    ).toBe('session_not_found');
  });
});
