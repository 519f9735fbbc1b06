/**
 * The journal benchmark's bulk path (docs/benchmarks.md, "The journal at 1,000,000
 * events"): `insert ... select ... from generate_series(...)` statements that write
 * sessions, turns, the transcript, the journal and usage rows with exactly the shapes the
 * real write path leaves after a plain chat turn has been admitted and answered:
 *
 * - events, per turn: `message` (payload `{}`, its text the transcript row at its
 *   sequence: `message_offset` 0), `turn_started`
 *   (`{attempt}`: a burst of one turn stores no `turn_ids`), one to three `text_delta`
 *   (`{delta}`: together the reply), `usage` (the provider call's figures, less those at
 *   their usual value) and `done` (`{}`, the reply at its sequence); sequences gapless per
 *   session from 1;
 * - messages: the user's (at the `message` event's sequence) and the reply (at `done`'s);
 * - turns: `done`, position 1..n, the fingerprint admission computes, admitted_sequence,
 *   answered_by null (answered by itself), the reply's tokens;
 * - usage: one row per turn, as the commit bills it;
 * - sessions: `idle`, `input_count = input_cursor` = turns, `last_sequence` = events,
 *   token totals = the sum of their turns', `updated_at` = the last event's time.
 *
 * Everything is a function of the session's index `i`, so a journal grows by appending
 * index ranges, and the same index always yields the same rows. Most sessions are short
 * (1 to 6 turns), one in ten has 30 turns, one in a hundred 200 turns (about 1,200
 * events). Sessions are spread over `tenants` (unevenly), owners and time: session `i`
 * starts at `start + i * spacing`, its turns two minutes apart.
 */
import type { Queryable } from '../src/store/db.js';

export const tenants = ['acme', 'globex', 'initech', 'umbrella'] as const;

/** The agent every bulk session belongs to (the benchmark's configuration names it). */
export const bulkAgent = 'default';

/** Turns of session `i`: the SQL below has the same expression. */
export function turnsOf(i: number): number {
  if (i % 100 === 50) return 200;
  if (i % 10 === 5) return 30;
  return 1 + ((i * 7) % 6);
}

/** Events of a session of `turns` turns: turn t has 5 + (t-1) % 3 events (one to three deltas). */
export function eventsOf(turns: number): number {
  return 18 * Math.floor(turns / 3) + [0, 5, 11][turns % 3]!;
}

/**
 * The tenant of session `i`: half are acme's, then globex's, initech's, umbrella's, long
 * and short sessions alike.
 */
export function tenantOf(i: number): string {
  return tenants[
    [0, 0, 0, 0, 0, 1, 1, 1, 2, 3][(i + Math.floor(i / 10) + Math.floor(i / 100)) % 10]!
  ]!;
}

/** The owner of session `i` (the author of its messages). */
export function ownerOf(i: number): string {
  return `user-${i % 97}`;
}

const turnsSql = `case when i % 100 = 50 then 200 when i % 10 = 5 then 30 else 1 + (i * 7) % 6 end`;
const tenantSql = `(array[${tenants.map((t) => `'${t}'`).join(', ')}])[1 + (array[0,0,0,0,0,1,1,1,2,3])[1 + (i + i / 10 + i / 100) % 10]]`;

/** Session ids, message ids: ULID-shaped (26 Crockford characters), ordered by `i`. */
export function bulkSessionId(i: number): string {
  return `01JB${i.toString(16).toUpperCase().padStart(22, '0')}`;
}

/**
 * One row per session of the range, then one per turn: what every insert below selects
 * from. `started` is the session's first admission; turn t's admission is two minutes
 * after the previous one's.
 */
const turnRows = `
  sessions_in as (
    select i,
           '01JB' || lpad(upper(to_hex(i)), 22, '0') as session_id,
           ${tenantSql} as tenant,
           'user-' || (i % 97) as owner,
           ${turnsSql} as turns,
           $3::timestamptz + i * $4::interval as started
      from generate_series($1::integer, $2::integer - 1) as i
  ), turns_in as (
    select s.*, t, (t - 1) % 3 + 1 as deltas,
           18 * ((t - 1) / 3) + (array[0, 5, 11])[(t - 1) % 3 + 1] as base,
           'bulk-' || s.i || '-' || t as turn_id,
           'msg_01JC' || lpad(upper(to_hex(s.i)), 12, '0') || lpad(upper(to_hex(2 * t)), 10, '0')
             as user_message_id,
           'msg_01JC' || lpad(upper(to_hex(s.i)), 12, '0') || lpad(upper(to_hex(2 * t + 1)), 10, '0')
             as reply_message_id,
           'Message ' || t || ' of session ' || s.i
             || ': please summarise how the worker retries a failed provider call and what the operator sees'
             as content,
           s.started + (t - 1) * interval '2 minutes' as admitted_at,
           12 + 20 * (t - 1) as input_tokens
      from sessions_in s, generate_series(1, s.turns) as t
  ), turns_full as (
    select u.*, 9 * u.deltas as output_tokens,
           u.admitted_at + (100 + 40 * u.deltas + 20) * interval '1 millisecond' as done_at
      from turns_in u
  )`;

/** Delta `j` of turn `t`: the reply is the deltas in order. */
const deltaSql = (j: string, t: string) =>
  `'Part ' || ${j} || ' of the answer to message ' || ${t} || ': the worker backs off, retries within the deadline and journals every step. '`;

const replySql = (u: string) =>
  `(select string_agg(${deltaSql('j', `${u}.t`)}, '' order by j) from generate_series(1, ${u}.deltas) as j)`;

const statements = [
  // Sessions first (turns, messages and events reference them), with their counters.
  `with ${turnRows}
   insert into sessions (session_id, tenant, agent, state, last_sequence, earliest_sequence,
                         input_count, input_cursor, input_tokens, output_tokens, cost_usd,
                         created_at, updated_at, journal_since, owner, visibility)
   select s.session_id, s.tenant, '${bulkAgent}', 'idle', max(u.base + u.deltas + 4), 1,
          s.turns, s.turns, sum(u.input_tokens), sum(u.output_tokens), 0,
          s.started, max(u.done_at), s.started, s.owner, 'tenant'
     from sessions_in s join turns_full u on u.i = s.i
    group by s.session_id, s.tenant, s.turns, s.started, s.owner`,
  `with ${turnRows}
   insert into turns (tenant, turn_id, session_id, position, state, fingerprint,
                      admitted_sequence, answered_by, created_at, completed_at,
                      input_tokens, output_tokens, cost_usd)
   select u.tenant, u.turn_id, u.session_id, u.t, 'done',
          substring(sha256(convert_to('[' || to_json(u.content)::text || ',null]', 'UTF8')) from 1 for 16),
          u.base + 1, null, u.admitted_at, u.done_at,
          u.input_tokens, u.output_tokens, 0
     from turns_full u`,
  `with ${turnRows}
   insert into messages (message_id, tenant, session_id, turn_id, role, author, content,
                         sequence, created_at)
   select u.user_message_id, u.tenant, u.session_id, u.turn_id, 'user', u.owner, u.content,
          u.base + 1, u.admitted_at
     from turns_full u
   union all
   select u.reply_message_id, u.tenant, u.session_id, u.turn_id, 'assistant', '${bulkAgent}',
          ${replySql('u')}, u.base + u.deltas + 4, u.done_at
     from turns_full u`,
  `with ${turnRows}
   insert into events (session_id, sequence, type, turn_id, payload, at, message_offset)
   select u.session_id, u.base + n,
          case when n = 1 then 'message' when n = 2 then 'turn_started'
               when n <= u.deltas + 2 then 'text_delta' when n = u.deltas + 3 then 'usage'
               else 'done' end,
          u.turn_id,
          case when n = 1 then '{}'::jsonb
               when n = 2 then jsonb_build_object('attempt', 1)
               when n <= u.deltas + 2 then jsonb_build_object('delta', ${deltaSql('(n - 2)', 'u.t')})
               when n = u.deltas + 3 then jsonb_build_object(
                 'model', 'demo/echo', 'ttft_ms', 9, 'latency_ms', 40 * u.deltas + 20,
                 'input_tokens', u.input_tokens, 'output_tokens', u.output_tokens)
               else '{}'::jsonb end,
          case when n = 1 then u.admitted_at
               when n = 2 then u.admitted_at + interval '60 milliseconds'
               when n <= u.deltas + 2 then u.admitted_at + (60 + 40 * (n - 2)) * interval '1 millisecond'
               else u.done_at end,
          case when n = 1 or n = u.deltas + 4 then 0 end
     from turns_full u, generate_series(1, u.deltas + 4) as n`,
  `with ${turnRows}
   insert into usage (tenant, session_id, turn_id, agent, model, purpose, outcome,
                      input_tokens, output_tokens, cached_input_tokens, reasoning_tokens,
                      cost_usd, latency_ms, ttft_ms, at)
   select u.tenant, u.session_id, u.turn_id, '${bulkAgent}', 'demo/echo', 'reply', 'ok',
          u.input_tokens, u.output_tokens, 0, 0, 0, 40 * u.deltas + 20, 9, u.done_at
     from turns_full u`,
];

export interface BulkTimeline {
  /** When session 0 starts. */
  start: Date;
  /** Between two sessions' starts. */
  spacingMs: number;
}

/**
 * A timeline that puts `sessions` sessions in the year before `now`, the last one
 * starting a day before it, so its 200-turn sessions end before `now` too.
 */
export function timelineFor(sessions: number, now = new Date()): BulkTimeline {
  const yearMs = 365 * 24 * 3600_000;
  return {
    start: new Date(now.getTime() - yearMs - 24 * 3600_000),
    spacingMs: yearMs / Math.max(1, sessions),
  };
}

/**
 * Writes sessions `from` (inclusive) to `to` (exclusive) with everything that hangs off
 * them, in one transaction per call of `transaction` (the caller picks the range size).
 */
export async function writeSessions(
  db: { transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> },
  from: number,
  to: number,
  timeline: BulkTimeline,
): Promise<void> {
  const params = [from, to, timeline.start, `${timeline.spacingMs} milliseconds`];
  await db.transaction(async (tx) => {
    for (const statement of statements) await tx.query(statement, params);
  });
}

/** The first session index past `events` events, from session 0. */
export function sessionsForEvents(events: number): number {
  let total = 0;
  let i = 0;
  while (total < events) total += eventsOf(turnsOf(i++));
  return i;
}

/** Events of sessions `from` to `to` (exclusive). */
export function eventsBetween(from: number, to: number): number {
  let total = 0;
  for (let i = from; i < to; i++) total += eventsOf(turnsOf(i));
  return total;
}

/**
 * Grows the journal from session `from` to `to` in chunks of about `chunkEvents` events,
 * one transaction each (a long transaction would hold a large part of the tables).
 */
export async function growJournal(
  db: { transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> },
  from: number,
  to: number,
  timeline: BulkTimeline,
  chunkEvents = 100_000,
): Promise<void> {
  let start = from;
  while (start < to) {
    let end = start;
    let events = 0;
    while (end < to && events < chunkEvents) events += eventsOf(turnsOf(end++));
    await writeSessions(db, start, end, timeline);
    start = end;
  }
}
