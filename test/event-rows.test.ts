import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEvent, type NewEvent } from '../src/protocol/events.js';
import { storedEventsJson, toWireEvent, type EventRow } from '../src/store/eventRows.js';
import { readEvents } from '../src/store/readEvents.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// A journal row stores less than its event says when the row already says it: `turn_ids`
// that are just the row's turn, and a `usage` event's fields at their usual value. Reading
// puts them back, so clients receive exactly the events they would have before.

const usage = {
  input_tokens: 12,
  output_tokens: 5,
  cached_input_tokens: 0,
  reasoning_tokens: 0,
  cost_usd: 0,
  model: 'demo/echo',
  latency_ms: 40,
  ttft_ms: null,
  purpose: 'reply' as const,
  outcome: 'ok' as const,
};

/** Stores `events` as the insert statements do, then reads each back as a client gets it. */
function roundTrip(events: NewEvent[]): { stored: any[]; read: unknown[] } {
  const stored = JSON.parse(storedEventsJson(events)) as any[];
  const read = stored.map((row, index) =>
    toWireEvent({
      sequence: index + 1,
      type: row.type,
      turn_id: row.turn_id,
      payload: row.payload,
      at_ms: 0,
      refers: row.transcript !== null,
      message_id: row.transcript === null ? null : 'msg_1',
      role: 'assistant',
      author: 'default',
      content: 'the reply',
      raw_content: null,
    } satisfies EventRow),
  );
  return { stored, read };
}

describe('what a journal row stores of its event', () => {
  it("leaves out turn_ids that are just the row's turn, and keeps any other list", () => {
    const { stored, read } = roundTrip([
      newEvent('turn_started', 'a', { attempt: 1, turn_ids: ['a'], agent: 'default' }),
      newEvent('cancelled', 'a', { turn_ids: ['a', 'b'], actor: null, command_id: 'c1' }),
      newEvent('error', 'a', { code: 'x', message: 'y', turn_ids: ['b'] }),
    ] as NewEvent[]);
    expect(stored.map((row) => row.payload.turn_ids)).toEqual([undefined, ['a', 'b'], ['b']]);
    expect(read.map((event: any) => event.turn_ids)).toEqual([['a'], ['a', 'b'], ['b']]);
  });

  it("leaves out a usage event's fields at their usual value, and keeps the others", () => {
    const other = { ...usage, cost_usd: 0.25, reasoning_tokens: 3, outcome: 'failed' as const };
    const { stored, read } = roundTrip([
      newEvent('usage', 'a', usage),
      newEvent('usage', 'a', other),
    ] as NewEvent[]);
    expect(Object.keys(stored[0].payload).sort()).toEqual(
      ['input_tokens', 'latency_ms', 'model', 'output_tokens', 'ttft_ms'].sort(),
    );
    expect(stored[1].payload).toMatchObject({
      cost_usd: 0.25,
      reasoning_tokens: 3,
      outcome: 'failed',
    });
    expect(read[0]).toMatchObject(usage);
    expect(read[1]).toMatchObject(other);
    expect(Object.keys(read[0] as object).sort()).toEqual(
      ['at', 'sequence', 'turn_id', 'type', ...Object.keys(usage)].sort(),
    );
  });
});

describe('a turn journaled and read back', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('stores its events compactly (the claim statement too), refers to its transcript by offset, and reads them whole', async () => {
    const admitted = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'rows_1',
      message: 'hello rows',
    });
    expect(admitted.status).toBe(202);
    const sessionId = admitted.body.session_id as string;
    const events = await until(
      () => readEvents(server.db, sessionId, 0, 100),
      (found) => found.some((event) => event.type === 'done'),
      'the turn to end',
    );
    const raw = await server.db.query<{
      type: string;
      sequence: number;
      payload: Record<string, unknown>;
      message_id: string | null;
      message_offset: number | null;
    }>(
      'select type, sequence, payload, message_id, message_offset from events where session_id = $1 order by sequence',
      [sessionId],
    );
    // The transcript rows are referred to by offset, not by id: the user's message and the
    // reply at their own events' sequences, the one-batch delta at its reply's.
    const refers = raw.rows.filter((row) => row.message_offset !== null);
    expect(refers.map((row) => row.type)).toEqual(['message', 'text_delta', 'done']);
    expect(raw.rows.every((row) => row.message_id === null)).toBe(true);
    const [message, delta, done] = refers as [any, any, any];
    expect([message.message_offset, done.message_offset]).toEqual([0, 0]);
    expect(delta.sequence + delta.message_offset).toBe(done.sequence);
    const rawOf = (type: string) => raw.rows.find((row) => row.type === type)?.payload;
    expect(rawOf('turn_started')).toBeDefined();
    expect(rawOf('turn_started')).not.toHaveProperty('turn_ids');
    expect(rawOf('done')).not.toHaveProperty('turn_ids');
    expect(rawOf('usage')).not.toHaveProperty('purpose');
    const eventOf = (type: string) => events.find((event) => event.type === type) as any;
    expect(eventOf('turn_started').turn_ids).toEqual(['rows_1']);
    expect(eventOf('done').turn_ids).toEqual(['rows_1']);
    expect(eventOf('usage')).toMatchObject({ purpose: 'reply', outcome: 'ok', cost_usd: 0 });
    expect(eventOf('message').message).toMatchObject({ role: 'user', content: 'hello rows' });
    expect(eventOf('text_delta').delta).toBe(eventOf('done').final_message.content);
    expect(eventOf('done').final_message.content).toContain('hello rows');
    // The turn keeps 16 bytes of its fingerprint (a retry is the same turn, other input
    // not) and no message id: its user message is the transcript row at its sequence.
    const stored = await server.db.query<{ bytes: number; message_id: string | null }>(
      `select octet_length(fingerprint) as bytes, message_id from turns where turn_id = 'rows_1'`,
    );
    expect(stored.rows[0]).toEqual({ bytes: 16, message_id: null });
    const retried = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'rows_1',
      session_id: sessionId,
      message: 'hello rows',
    });
    expect(retried.status).toBe(202);
    const other = await request(server.url, 'POST', '/api/v1/chat/turns', {
      turn_id: 'rows_1',
      session_id: sessionId,
      message: 'hello other rows',
    });
    expect(other.status).toBe(409);
    expect(other.body.error).toBe('turn_conflict');
  });
});
