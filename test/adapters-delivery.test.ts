import type { Adapter, AdapterPostableMessage } from 'chat';
import { monotonicFactory } from 'ulid';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fold } from '../src/adapters/delivery/fold.js';
import { foldStepWith } from '../src/adapters/delivery/loop.js';
import { deliverReply } from '../src/adapters/delivery/sender.js';
import type { PlatformClient } from '../src/adapters/platforms/types.js';
import type { SlackConfig } from '../src/config/platformTypes.js';
import { createLogger } from '../src/log.js';
import { newEvent, type NewEvent, type ParleyEvent } from '../src/protocol/events.js';
import { journalEvents } from '../src/store/appendEvents.js';
import { releaseOutboxLeases } from '../src/store/releaseOutboxLeases.js';
import { bindThread } from '../src/store/bindThread.js';
import { claimReplies } from '../src/store/claimReplies.js';
import type { Db } from '../src/store/db.js';
import { foldThread } from '../src/store/foldThread.js';
import { openTestDb } from './support/db.js';

const nextUlid = monotonicFactory();
const newId = () => `rep_${nextUlid()}`;
const log = createLogger({ level: 'silent' });

const platform: SlackConfig = {
  platform: 'slack',
  tenant: 'acme',
  agent: 'default',
  apiUrl: null,
  users: {},
  defaultRoles: [],
  editIntervalMs: 1,
  retryBaseMs: 1,
  maxAttempts: 3,
  timeoutMs: 1000,
  typingTimeoutMs: 1000,
  signingSecretEnv: 'X',
  botTokenEnv: 'Y',
  nativeStreaming: false,
};

/** A platform that records what it is asked to do (the delivery's I/O, injected). */
class RecordingPlatform {
  readonly calls: { op: string; id?: string; text: string }[] = [];
  readonly shown = new Map<string, string>();
  failures = 0;
  private next = 1;

  client(withStream = false): PlatformClient {
    const text = (message: AdapterPostableMessage) => JSON.stringify(message);
    const fail = () => {
      if (this.failures > 0) {
        this.failures -= 1;
        throw new Error('platform unavailable');
      }
    };
    return {
      name: 'slack',
      config: platform,
      adapter: {} as Adapter,
      verify: async () => true,
      post: async (_thread, message) => {
        fail();
        const id = `m${this.next++}`;
        this.calls.push({ op: 'post', id, text: text(message) });
        this.shown.set(id, text(message));
        return id;
      },
      edit: async (_thread, id, message) => {
        fail();
        this.calls.push({ op: 'edit', id, text: text(message) });
        this.shown.set(id, text(message));
      },
      typing: async () => {},
      notify: async () => {},
      ...(withStream
        ? {
            stream: {
              available: () => true,
              start: async (_thread, streamed) => {
                fail();
                const id = `m${this.next++}`;
                this.calls.push({ op: 'start', id, text: streamed });
                this.shown.set(id, streamed);
                return id;
              },
              append: async (_thread, id, streamed) => {
                this.calls.push({ op: 'append', id, text: streamed });
                this.shown.set(id, `${this.shown.get(id) ?? ''}${streamed}`);
              },
              stop: async (_thread, id) => {
                this.calls.push({ op: 'stop', id, text: '' });
              },
            },
          }
        : {}),
    };
  }
}

let db: Db;
let close: () => Promise<void>;
let sessionId: string;

function journal(events: NewEvent[]) {
  return db.transaction((tx) => journalEvents(tx, sessionId, events));
}

/** Folds the journal into the outbox and delivers everything due, until nothing is. */
async function deliverAll(client: PlatformClient) {
  await foldThread(db, sessionId, foldStepWith(newId));
  for (let round = 0; round < 20; round++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    const token = `token${round}`;
    const rows = await claimReplies(db, { adapters: ['slack'], token, leaseMs: 10_000, limit: 10 });
    if (rows.length === 0) {
      const waiting = await db.query(
        `select 1 from adapter_replies where state = 'pending' and version > delivered_version`,
      );
      if (waiting.rowCount === 0) return;
      continue;
    }
    for (const row of rows) {
      await deliverReply({ db, clients: new Map([['slack', client]]), log }, row, token);
    }
  }
}

const turn = 'turn_1';
const started = (attempt = 1) => newEvent('turn_started', turn, { attempt, turn_ids: [turn] });
const delta = (text: string) => newEvent('text_delta', turn, { delta: text });
const done = (content: string) =>
  newEvent('done', turn, {
    final_message: { id: 'msg_1', role: 'assistant', content },
    turn_ids: [turn],
  });

describe('platform delivery', () => {
  beforeEach(async () => {
    ({ db, close } = await openTestDb());
    sessionId = await bindThread(db, {
      tenant: 'acme',
      adapter: 'slack',
      threadId: 'slack:C1:1.0',
      agent: 'default',
      greeting: null,
      context: { user_id: 'U1', team_id: 'T1' },
    });
  });
  afterEach(async () => {
    await close();
  });

  it('rewrites the partial message after attempt_reset instead of posting a second one', async () => {
    const platformCalls = new RecordingPlatform();
    const client = platformCalls.client();
    await journal([started(), delta('The first attempt was')]);
    await deliverAll(client);
    expect(platformCalls.calls).toEqual([
      { op: 'post', id: 'm1', text: expect.stringContaining('The first attempt was') },
    ]);
    await journal([
      newEvent('attempt_reset', turn, { attempt: 1 }),
      started(2),
      delta('The second attempt'),
    ]);
    await deliverAll(client);
    await journal([delta(' finished.')]);
    // `done` carries the final text, from the reply's transcript row at its sequence (the
    // next one), as the commit writes both.
    await db.query(
      `insert into messages (message_id, tenant, session_id, turn_id, role, author, content, sequence)
       select 'msg_1', 'acme', $1, $2, 'assistant', 'default', 'The second attempt finished.',
              last_sequence + 1
         from sessions where session_id = $1`,
      [sessionId, turn],
    );
    await journal([done('The second attempt finished.')]);
    await deliverAll(client);
    expect(platformCalls.calls.filter((call) => call.op === 'post')).toHaveLength(1);
    expect(platformCalls.calls.at(-1)).toMatchObject({ op: 'edit', id: 'm1' });
    expect(platformCalls.shown.get('m1')).toContain('The second attempt finished.');
    expect(platformCalls.shown.get('m1')).not.toContain('first');
  });

  it("rewrites a platform stream's partial message after attempt_reset, then edits it", async () => {
    const platformCalls = new RecordingPlatform();
    const client = platformCalls.client(true);
    await journal([started(), delta('Partial')]);
    await deliverAll(client);
    await journal([delta(' more')]);
    await deliverAll(client);
    expect(platformCalls.calls.map((call) => call.op)).toEqual(['start', 'append']);
    await journal([newEvent('attempt_reset', turn, { attempt: 1 }), started(2), delta('Again')]);
    await deliverAll(client);
    expect(platformCalls.calls.map((call) => call.op)).toEqual(['start', 'append', 'stop', 'edit']);
    expect(platformCalls.shown.get('m1')).toContain('Again');
    expect(platformCalls.shown.get('m1')).not.toContain('Partial');
  });

  it('posts a thread in journal order: a later message waits for an earlier one that fails', async () => {
    const platformCalls = new RecordingPlatform();
    const client = platformCalls.client();
    platformCalls.failures = 2;
    await journal([
      newEvent('message', null, {
        message: {
          id: 'msg_g',
          role: 'assistant',
          author: 'default',
          content: 'Hello, I am the greeting.',
        },
      }),
    ]);
    await db.query(
      `insert into messages (message_id, tenant, session_id, role, author, content, sequence)
       values ('msg_g', 'acme', $1, 'assistant', 'default', 'Hello, I am the greeting.', 1)`,
      [sessionId],
    );
    await journal([
      started(),
      newEvent('tool_call', turn, {
        call_id: 'c1',
        tool: 'calculator',
        arguments: { expression: '1+1' },
      }),
      newEvent('input_required', turn, {
        request_id: 'req_1',
        kind: 'approval',
        call_id: 'c1',
        tool: 'calculator',
        arguments: { expression: '1+1' },
      }),
    ]);
    await deliverAll(client);
    const posts = platformCalls.calls.filter((call) => call.op === 'post');
    expect(posts).toHaveLength(2);
    expect(posts[0]?.text).toContain('greeting');
    expect(posts[1]?.text).toContain('p.a');
  });

  // The dead sender's lease ends by expiring, or (embedded storage) when the restarted
  // process releases the leases its data directory's lock proves dead.
  it.each([
    [
      'its lease expired',
      () => db.query(`update adapter_replies set lease_expires_at = now() - interval '1 second'`),
    ],
    ['the restarted embedded process released it', () => releaseOutboxLeases(db)],
  ])(
    'reads the thread back before posting a row whose earlier sender died after its post (%s)',
    async (_how, end) => {
      await journal([started(), delta('Hello'), done('Hello')]);
      await foldThread(db, sessionId, foldStepWith(newId));
      const platformCalls = new RecordingPlatform();
      const client = platformCalls.client();
      const lookedUp: string[] = [];
      // The platform keeps what the dead sender posted; reading the thread finds it.
      client.findPosted = async (_thread, lost) => {
        lookedUp.push(lost.key);
        return [...platformCalls.shown.keys()][0] ?? null;
      };
      // A sender claims the row, posts, and is killed before it records anything.
      const [claimed] = await claimReplies(db, {
        adapters: ['slack'],
        token: 'dead',
        leaseMs: 10_000,
        limit: 10,
      });
      expect(claimed).toMatchObject({ attempts: 0, interrupted: false });
      await client.post(
        'slack:C1:1.0',
        { markdown: 'Hello' },
        claimed?.reply_id ?? '',
        AbortSignal.timeout(1000),
      );
      await end();

      const [again] = await claimReplies(db, {
        adapters: ['slack'],
        token: 'next',
        leaseMs: 10_000,
        limit: 10,
      });
      expect(again).toMatchObject({ attempts: 0, interrupted: true });
      await deliverReply({ db, clients: new Map([['slack', client]]), log }, again!, 'next');
      expect(lookedUp).toEqual([claimed?.reply_id]);
      // One post: the dead sender's, found and kept.
      expect(platformCalls.calls.filter((call) => call.op === 'post')).toHaveLength(1);
      const row = await db.query<{ platform_message_id: string; state: string }>(
        'select platform_message_id, state from adapter_replies',
      );
      expect(row.rows).toEqual([{ platform_message_id: 'm1', state: 'delivered' }]);
    },
  );

  it('gives a message up after its last attempt, keeping it (dead) with its error', async () => {
    const platformCalls = new RecordingPlatform();
    platformCalls.failures = 10;
    await journal([started(), delta('never shown')]);
    await deliverAll(platformCalls.client());
    const row = await db.query<{ state: string; attempts: number; last_error: string }>(
      'select state, attempts, last_error from adapter_replies',
    );
    expect(row.rows).toEqual([{ state: 'dead', attempts: 3, last_error: 'platform unavailable' }]);
  });
});

describe('fold (journal events into outbox rows)', () => {
  const at = '2026-01-01T00:00:00.000Z';
  const wire = (events: NewEvent[]): ParleyEvent[] =>
    events.map(
      (event, index) =>
        ({
          type: event.type,
          sequence: index + 1,
          at,
          turn_id: event.turn_id ?? undefined,
          ...event.data,
        }) as ParleyEvent,
    );

  it('closes the reply at an input request and resolves the card with its actor', () => {
    const rows = { byId: new Map(), byRequest: new Map() };
    const result = fold(
      { openReplyId: null, typing: false },
      wire([
        started(),
        delta('Let me compute.'),
        newEvent('input_required', turn, {
          request_id: 'req_9',
          kind: 'approval',
          call_id: 'c',
          tool: 'calculator',
        }),
        newEvent('input_resolved', turn, {
          request_id: 'req_9',
          approved: false,
          actor: { user: 'rita', tenant: 'acme' },
        }),
      ]),
      rows,
      newId,
    );
    const touched = [...result.touched];
    expect(touched.map((row) => row.kind)).toEqual(['reply', 'approval']);
    expect(touched[0]).toMatchObject({ final: true, content: { text: 'Let me compute.' } });
    expect(touched[1]).toMatchObject({
      final: true,
      content: { resolution: { approved: false, actor: 'rita' }, expected_sequence: 3 },
    });
    expect(result.state).toEqual({ openReplyId: null, typing: false });
  });

  it('drops an empty reply closed by an input request, and marks typing while a worker holds the session', () => {
    const rows = { byId: new Map(), byRequest: new Map() };
    const typing = fold({ openReplyId: null, typing: false }, wire([started()]), rows, newId);
    expect(typing.state.typing).toBe(true);
    const closed = fold(
      typing.state,
      wire([
        newEvent('input_required', turn, {
          request_id: 'req_1',
          kind: 'question',
          call_id: 'c',
          prompt: 'Which?',
        }),
      ]),
      rows,
      newId,
    );
    const reply = [...rows.byId.values()].find((row) => row.kind === 'reply');
    expect(reply).toMatchObject({ state: 'delivered', final: true });
    expect(closed.state.typing).toBe(false);
  });

  it('posts an escalation and a reminder as messages of their own, naming the tool', () => {
    const rows = { byId: new Map(), byRequest: new Map() };
    const result = fold(
      { openReplyId: null, typing: false },
      wire([
        newEvent('input_required', turn, {
          request_id: 'req_5',
          kind: 'approval',
          call_id: 'c',
          tool: 'refund',
        }),
        newEvent('input_escalated', turn, { request_id: 'req_5', step: 1, to: 'role:lead' }),
        newEvent('input_reminder', turn, {
          request_id: 'req_5',
          deadline_at: '2026-01-01T01:00:00.000Z',
        }),
      ]),
      rows,
      newId,
    );
    const notices = [...result.touched].filter((row) => row.kind === 'notice');
    expect(notices.map((row) => row.content)).toEqual([
      {
        type: 'notice',
        text: 'The approval of refund is escalated to role:lead: it may answer it now.',
      },
      {
        type: 'notice',
        text: 'Reminder — The approval of refund still waits for an answer: its default applies at 2026-01-01T01:00:00.000Z.',
      },
    ]);
    expect(notices.every((row) => row.final && row.request_id === null)).toBe(true);
  });
});
