import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bulkSessionId,
  eventsBetween,
  eventsOf,
  growJournal,
  ownerOf,
  sessionsForEvents,
  tenantOf,
  tenants,
  timelineFor,
  turnsOf,
} from '../bench/journalBulk.js';
import { admitTurn, type AdmitTurnInput } from '../src/store/admitTurn.js';
import type { Db } from '../src/store/db.js';
import { readEvents } from '../src/store/readEvents.js';
import { trustedViewer } from '../src/store/visibility.js';
import { openTestDb } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';

/**
 * The journal benchmark's bulk path (bench/journalBulk.ts) at a tiny size: what it writes
 * must be a journal the real write path could have written, so that the benchmark's
 * figures are figures of Parley's tables, and the bulk path cannot drift from the schema
 * unnoticed.
 */
describe("the journal benchmark's bulk path", () => {
  let db: Db;
  let close: () => Promise<void>;
  const sessions = sessionsForEvents(2000);

  beforeAll(async () => {
    ({ db, close } = await openTestDb());
    const timeline = timelineFor(sessions);
    // Two growth steps, the second in small chunks: appending ranges is how it grows.
    const middle = Math.floor(sessions / 2);
    await growJournal(db, 0, middle, timeline);
    await growJournal(db, middle, sessions, timeline, 300);
  });

  afterAll(async () => {
    await close();
  });

  it('writes the planned number of sessions and events, spread over tenants and lengths', async () => {
    const counts = (
      await db.query<{ sessions: number; events: number; tenants: number; longest: number }>(
        `select (select count(*)::int from sessions) as sessions,
                (select count(*)::int from events) as events,
                (select count(distinct tenant)::int from sessions) as tenants,
                (select max(last_sequence)::int from sessions) as longest`,
      )
    ).rows[0];
    expect(counts).toEqual({
      sessions,
      events: eventsBetween(0, sessions),
      tenants: tenants.length,
      longest: Math.max(...Array.from({ length: sessions }, (_, i) => eventsOf(turnsOf(i)))),
    });
    expect(counts!.events).toBeGreaterThanOrEqual(2000);
    // The benchmark picks sessions by index: it must know each one's tenant and owner.
    const rows = await db.query<{ session_id: string; tenant: string; owner: string }>(
      'select session_id, tenant, owner from sessions',
    );
    const byId = new Map(rows.rows.map((row) => [row.session_id, row]));
    for (let i = 0; i < sessions; i++) {
      expect(byId.get(bulkSessionId(i))).toEqual({
        session_id: bulkSessionId(i),
        tenant: tenantOf(i),
        owner: ownerOf(i),
      });
    }
  });

  it('keeps the journal invariants: gapless sequences, one terminal event per turn, one user message each', async () => {
    await checkJournalInvariants(db);
  });

  it("keeps every session's counters consistent with its turns, transcript, journal and usage", async () => {
    const mismatched = await db.query(
      `select s.session_id from sessions s
        where s.input_count <> (select count(*) from turns t where t.session_id = s.session_id)
           or s.input_cursor <> s.input_count
           or s.state <> 'idle'
           or s.last_sequence <> (select count(*) from events e where e.session_id = s.session_id)
           or s.last_sequence <> (select max(sequence) from events e where e.session_id = s.session_id)
           or s.input_tokens <> (select sum(t.input_tokens) from turns t where t.session_id = s.session_id)
           or s.output_tokens <> (select sum(t.output_tokens) from turns t where t.session_id = s.session_id)
           or s.input_tokens <> (select sum(u.input_tokens) from usage u where u.session_id = s.session_id)
           or s.updated_at <> (select max(e.at) from events e where e.session_id = s.session_id)
           or s.journal_since <> (select min(e.at) from events e where e.session_id = s.session_id)
           or 2 * s.input_count <> (select count(*) from messages m where m.session_id = s.session_id)`,
    );
    expect(mismatched.rows).toEqual([]);
    const turns = await db.query(
      `select t.turn_id from turns t
        where t.answered_by is not null or t.state <> 'done'
           or t.message_id is not null
           or not exists (select 1 from messages m where m.session_id = t.session_id
                           and m.sequence = t.admitted_sequence and m.role = 'user'
                           and m.turn_id = t.turn_id)
           or not exists (select 1 from events e where e.session_id = t.session_id
                           and e.sequence = t.admitted_sequence and e.type = 'message'
                           and e.message_offset = 0)`,
    );
    expect(turns.rows).toEqual([]);
  });

  it("stores a reply's text once: its deltas spell the transcript row that done refers to", async () => {
    const differing = await db.query(
      `select d.turn_id from events d
         join messages m on m.message_id = d.message_id
        where d.type = 'done'
          and m.content <> (select string_agg(x.payload ->> 'delta', '' order by x.sequence)
                              from events x
                             where x.session_id = d.session_id and x.turn_id = d.turn_id
                               and x.type = 'text_delta')`,
    );
    expect(differing.rows).toEqual([]);
  });

  it('is read by the real read path as a real journal', async () => {
    const sessionId = bulkSessionId(1);
    const events = await readEvents(db, sessionId, 0, 200);
    expect(events.map((event) => event.type)).toEqual(
      Array.from({ length: turnsOf(1) }, (_, index) => [
        'message',
        'turn_started',
        ...Array.from({ length: (index % 3) + 1 }, () => 'text_delta'),
        'usage',
        'done',
      ]).flat(),
    );
    const first = events[0] as any;
    expect(first).toMatchObject({
      sequence: 1,
      turn_id: 'bulk-1-1',
      message: { role: 'user', content: expect.stringContaining('Message 1 of session 1') },
    });
    const done = events.find((event) => event.type === 'done') as any;
    expect(done.final_message).toMatchObject({
      role: 'assistant',
      content: (events[2] as any).delta,
    });
    expect(done.turn_ids).toEqual(['bulk-1-1']);
  });

  it('is admitted to by the real admission: a bulk turn retried replays, a new one follows on', async () => {
    const sessionId = bulkSessionId(1);
    const tenant = (
      await db.query<{ tenant: string; last_sequence: number; owner: string }>(
        'select tenant, last_sequence, owner from sessions where session_id = $1',
        [sessionId],
      )
    ).rows[0]!;
    const input = (turnId: string, message: string): AdmitTurnInput => ({
      tenant: tenant.tenant,
      author: tenant.owner,
      viewer: trustedViewer,
      turnId,
      sessionId,
      agent: null,
      defaultAgent: 'default',
      greetings: new Map([['default', null]]),
      visibilities: new Map([['default', 'tenant']]),
      message,
      option: null,
      attachments: [],
      triggers: new Map([['default', true]]),
      pendingInput: new Map([['default', 'supersede']]),
    });
    // The fingerprint the bulk path stored is the one admission computes.
    const retried = await admitTurn(
      db,
      input(
        'bulk-1-1',
        'Message 1 of session 1: please summarise how the worker retries a failed provider call and what the operator sees',
      ),
    );
    expect(retried).toEqual({
      session_id: sessionId,
      turn_id: 'bulk-1-1',
      sequence: 1,
      state: 'accepted',
    });
    const next = await admitTurn(db, input('after-bulk', 'one more question'));
    expect(next.sequence).toBe(tenant.last_sequence + 1);
    const position = await db.query<{ position: number }>(
      'select position from turns where turn_id = $1',
      [next.turn_id],
    );
    expect(position.rows[0]?.position).toBe(turnsOf(1) + 1);
    await checkJournalInvariants(db);
  });
});
