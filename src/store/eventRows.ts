import type { NewEvent, ParleyEvent } from '../protocol/events.js';

/**
 * How journal events are kept, and how they are turned back into what clients receive.
 *
 * Text is stored once: a `message` event and a `done` event refer to their transcript row
 * instead of copying its text, and are rebuilt from it on read; so does a `text_delta`
 * written with its reply's transcript row whose text is the whole reply as the model wrote
 * it (a short reply streamed in one batch). A row refers to its transcript row by the
 * distance between their sequences (`events.message_offset`: a transcript row's `sequence`
 * is that of the event that journaled it, so 0 for `message` and `done`); rows written
 * before migration 0094 name it (`events.message_id`), and read the same. Every other event keeps its
 * data in `payload`, less what the row already says: `turn_ids` when it is just the row's
 * `turn_id` (a burst of one turn), and a `usage` event's fields at their usual value
 * (`storedDefaults`); both are put back on read. A client receives the same bytes whether an
 * event reaches it live (carried in a wake-up, `liveEvents`) or replayed from the journal
 * (`toWireEvent`): both go through `wireEvent`, which orders object keys the way PostgreSQL
 * orders a jsonb object's keys, the order a replayed payload comes back in.
 */

/** An event as the `events` table holds it (the JSON the insert statements unpack). */
interface StoredEvent {
  type: string;
  turn_id: string | null;
  payload: Record<string, unknown>;
  /**
   * Where the transcript row the event refers to is: at the event's own sequence, at the
   * last sequence of the statement that journals it (the row it writes), or none.
   */
  transcript: 'self' | 'last' | null;
}

/** A journal row as the read statements return it (joined with its transcript row). */
export interface EventRow {
  sequence: number;
  type: string;
  turn_id: string | null;
  payload: Record<string, unknown>;
  at_ms: number;
  /** Whether the row refers to a transcript row (it is rebuilt from it). */
  refers: boolean;
  /** That row's id (the one the row names, for a row written before migration 0094). */
  message_id: string | null;
  role: string | null;
  author: string | null;
  content: string | null;
  raw_content: string | null;
}

/**
 * The SQL columns an `EventRow` is read with, from `eventRowsFrom`. `at_ms` is truncated
 * to the millisecond exactly as the wake-up computes it (see wakeups.ts), so both paths
 * agree on `at`.
 */
export const eventRowColumns = `e.sequence, e.type, e.turn_id, e.payload,
       (e.message_offset is not null or e.message_id is not null) as refers,
       coalesce(m.message_id, e.message_id) as message_id,
       floor(extract(epoch from e.at) * 1000)::bigint as at_ms, m.role, m.author, m.content,
       m.raw_content`;

/**
 * The transcript row `m` a journal row `e` refers to (if any): by its offset
 * (`messages_transcript`), or by its id for rows written before migration 0094.
 */
export const transcriptJoin = `left join lateral (
         select x.message_id, x.role, x.author, x.content, x.raw_content from messages x
          where x.session_id = e.session_id and x.sequence = e.sequence + e.message_offset
         union all
         select x.message_id, x.role, x.author, x.content, x.raw_content from messages x
          where x.message_id = e.message_id
       ) m on true`;

/** Journal rows `e`, each with the transcript row `m` it refers to (`transcriptJoin`). */
export const eventRowsFrom = `events e ${transcriptJoin}`;

/** The transcript row written with the events: a delta that is its whole text refers to it. */
export interface Transcript {
  id: string;
  content: string;
  /** The model's text when it differs from `content`. */
  rawContent: string | null;
}

/** The events that name the turns of their burst (`turn_ids`). */
const burstTypes = new Set(['turn_started', 'done', 'cancelled', 'error']);

/** A `usage` event's fields a row leaves out when they hold these values. */
const storedDefaults: Record<string, unknown> = {
  cached_input_tokens: 0,
  reasoning_tokens: 0,
  cost_usd: 0,
  purpose: 'reply',
  outcome: 'ok',
};

/**
 * The SQL of an event row's `turn_ids` (as a jsonb array) for readers of the `events` table
 * `e`: the stored list, else the row's own turn.
 */
export function turnIdsSql(e: string): string {
  return `coalesce(${e}.payload -> 'turn_ids', jsonb_build_array(${e}.turn_id))`;
}

/** What a row stores of an event's data: less what the row already says (see above). */
function compacted(
  type: string,
  turnId: string | null,
  payload: Record<string, unknown>,
): Record<string, unknown> {
  if (burstTypes.has(type)) {
    const ids = payload.turn_ids;
    if (turnId !== null && Array.isArray(ids) && ids.length === 1 && ids[0] === turnId) {
      const { turn_ids: _ids, ...rest } = payload;
      return rest;
    }
  } else if (type === 'usage') {
    const rest = { ...payload };
    for (const [key, value] of Object.entries(storedDefaults)) {
      if (rest[key] === value) delete rest[key];
    }
    return rest;
  }
  return payload;
}

/** An event's data from what its row stored (the inverse of `compacted`). */
function expanded(
  type: string,
  turnId: string | null,
  data: Record<string, unknown>,
): Record<string, unknown> {
  if (burstTypes.has(type) && data.turn_ids === undefined && turnId !== null) {
    return { ...data, turn_ids: [turnId] };
  }
  if (type === 'usage') return { ...storedDefaults, ...data };
  return data;
}

function toStored(event: NewEvent, transcript: Transcript | null): StoredEvent {
  const stored = storedShape(event, transcript);
  return { ...stored, payload: compacted(stored.type, stored.turn_id, stored.payload) };
}

function storedShape(event: NewEvent, transcript: Transcript | null): StoredEvent {
  if (event.type === 'message') {
    const {
      id: _id,
      role: _role,
      author: _author,
      content: _content,
      ...rest
    } = (event as NewEvent<'message'>).data.message;
    return { type: event.type, turn_id: event.turn_id, payload: rest, transcript: 'self' };
  }
  if (event.type === 'done') {
    const { final_message: final, turn_ids: turnIds } = (event as NewEvent<'done'>).data;
    const payload = final.options
      ? { turn_ids: turnIds, options: final.options }
      : { turn_ids: turnIds };
    const written = transcript !== null && transcript.id === final.id;
    return {
      type: event.type,
      turn_id: event.turn_id,
      payload,
      transcript: written ? 'last' : 'self',
    };
  }
  if (
    event.type === 'text_delta' &&
    transcript !== null &&
    (event as NewEvent<'text_delta'>).data.delta === (transcript.rawContent ?? transcript.content)
  ) {
    const { delta: _delta, ...rest } = (event as NewEvent<'text_delta'>).data;
    return { type: event.type, turn_id: event.turn_id, payload: rest, transcript: 'last' };
  }
  return {
    type: event.type,
    turn_id: event.turn_id,
    payload: event.data,
    transcript: null,
  };
}

/**
 * The JSON array the insert statements unpack with `jsonb_array_elements`; `transcript` is
 * the transcript row the same statement writes, if any.
 */
export function storedEventsJson(events: NewEvent[], transcript: Transcript | null = null): string {
  return JSON.stringify(events.map((event) => toStored(event, transcript)));
}

/**
 * Wake-ups carry small batches of new events so that readers need not read the journal
 * (PostgreSQL's NOTIFY payload is limited to 8000 bytes; what does not fit is read).
 */
export const liveLimitBytes = 7000;

export function liveEvents(events: NewEvent[]): string | null {
  const json = JSON.stringify(events);
  return Buffer.byteLength(json) <= liveLimitBytes ? json : null;
}

/** Rebuilds what a client receives from a journal row. */
export function toWireEvent(row: EventRow): ParleyEvent {
  let data = expanded(row.type, row.turn_id, row.payload);
  if (row.refers && row.type === 'message') {
    data = {
      message: {
        ...data,
        id: row.message_id,
        role: row.role,
        author: row.author,
        content: row.content,
      },
    };
  } else if (row.refers && row.type === 'done') {
    const { options, turn_ids: turnIds } = data;
    data = {
      final_message: {
        id: row.message_id,
        role: 'assistant',
        content: row.content,
        ...(options === undefined ? {} : { options }),
      },
      turn_ids: turnIds,
    };
  } else if (row.refers && row.type === 'text_delta') {
    data = { ...data, delta: row.raw_content ?? row.content };
  }
  return wireEvent(row.type, row.sequence, row.at_ms, row.turn_id, data);
}

/** The one shape of an event on the wire: type, sequence, at, turn_id, then its data. */
export function wireEvent(
  type: string,
  sequence: number,
  atMs: number,
  turnId: string | null,
  data: unknown,
): ParleyEvent {
  const event: Record<string, unknown> = { type, sequence, at: new Date(atMs).toISOString() };
  if (turnId !== null) event.turn_id = turnId;
  Object.assign(event, jsonbOrder(data));
  event.type = type;
  event.sequence = sequence;
  return event as unknown as ParleyEvent;
}

/**
 * Orders object keys as PostgreSQL's jsonb does (shorter keys first, then bytewise), at
 * every depth; arrays keep their order. A payload built in memory then serialises to the
 * same bytes as the same payload read back from a jsonb column.
 */
export function jsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(jsonbOrder);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (keys.length > 1) keys.sort(compareJsonbKeys);
  const ordered: Record<string, unknown> = {};
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined) continue;
    if (key === '__proto__') {
      // A key named "__proto__" (model-made tool arguments) stays a key.
      Object.defineProperty(ordered, key, {
        value: jsonbOrder(item),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      ordered[key] = jsonbOrder(item);
    }
  }
  return ordered;
}

const nonAscii = /[^\x00-\x7f]/;

/** jsonb's key order: byte length, then bytes (for ASCII keys, the strings' own order). */
function compareJsonbKeys(a: string, b: string): number {
  if (!nonAscii.test(a) && !nonAscii.test(b)) {
    return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  }
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length - right.length || Buffer.compare(left, right);
}
