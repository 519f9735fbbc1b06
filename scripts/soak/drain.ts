import type { Db } from '../../src/store/db.js';
import { sleep, type Apis } from './http.js';
import type { Random } from './random.js';

export interface DrainResult {
  /** Turns still queued or running when the deadline passed (each one is a failure). */
  open: number;
  /** Requests still waiting for a person that the drain approved (through the API). */
  answered: number;
  /** Parked sessions with queued turns that the drain unparked, as an operator would. */
  unparked: number;
  durationMs: number;
  /** For each session with a turn still open at the deadline: where it is stuck. */
  stuck: string[];
}

/**
 * How a drain sees the database. PostgreSQL: a connection beside the running processes
 * (`directAccess`). PGlite: one process owns the data directory, so `read` first stops the
 * server cleanly (it stays stopped until `serve`), and `pause` gives the server, started
 * again, time to work before the next look.
 */
export interface DrainAccess {
  read<T>(read: (db: Db) => Promise<T>): Promise<T>;
  /** The API answers again: the drain is about to act through it, or to wait for it. */
  serve(): Promise<void>;
  /** The wait between two looks. */
  pause(): Promise<void>;
}

/** A database the running processes share: every look is a query; a look every 500 ms. */
export function directAccess(db: Db): DrainAccess {
  return {
    read: (read) => read(db),
    serve: async () => {},
    pause: () => sleep(500),
  };
}

/**
 * After the chaos: waits until every admitted turn has ended. A turn waiting for a person
 * whose client had already moved on is approved here, through the API; a parked session
 * holding queued turns is unparked, as an operator would (`parley sessions unpark`).
 * Nothing else helps the system along: what is still open at the deadline is reported.
 */
export async function drain(
  access: DrainAccess,
  apis: Apis,
  random: Random,
  timeoutMs: number,
): Promise<DrainResult> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  const result: DrainResult = { open: 0, answered: 0, unparked: 0, durationMs: 0, stuck: [] };
  const tried = new Set<string>();
  for (;;) {
    const seen = await access.read(async (db) => {
      const open = await openTurns(db);
      if (open === 0) return { open, waiting: [], parked: [] };
      const waiting = await db
        .query<{ session_id: string; request_id: string; expected_sequence: number }>(
          `select session_id, request_id, expected_sequence from input_requests where state = 'pending'`,
        )
        .catch(() => ({ rows: [] }));
      const parked = await db
        .query<{ session_id: string }>(
          `select session_id from sessions where state = 'parked' and input_count > input_cursor`,
        )
        .catch(() => ({ rows: [] }));
      return { open, waiting: waiting.rows, parked: parked.rows };
    });
    result.open = seen.open;
    if (result.open === 0 || Date.now() > deadline) break;
    await access.serve();
    result.answered += await approveWaiting(seen.waiting, tried, apis, random);
    for (const session of seen.parked) {
      const answer = await apis.send(
        'POST',
        `/api/v1/admin/sessions/${session.session_id}/unpark`,
        {},
        {
          deadline: Date.now() + 10_000,
          random,
        },
      );
      if (answer?.status === 200) result.unparked += 1;
    }
    await access.pause();
  }
  result.durationMs = Date.now() - started;
  if (result.open !== 0) result.stuck = await access.read(describeStuck);
  return result;
}

/** The post-mortem of a session that did not finish: its state, lease, turns and requests. */
async function describeStuck(db: Db): Promise<string[]> {
  const found = await db
    .query<{
      session_id: string;
      state: string;
      leased: boolean;
      open_turns: string;
      requests: string | null;
      last_event: string | null;
    }>(
      `select s.session_id, s.state, s.lease_token is not null as leased,
              (select string_agg(t.turn_id || ' ' || t.state, ', ' order by t.position)
                 from turns t where t.session_id = s.session_id
                  and t.state in ('queued', 'running')) as open_turns,
              (select string_agg(r.request_id || ' ' || r.state, ', ')
                 from input_requests r where r.session_id = s.session_id
                  and r.turn_id in (select turn_id from turns t where t.session_id = s.session_id
                                      and t.state in ('queued', 'running'))) as requests,
              (select e.type || ' #' || e.sequence from events e
                where e.session_id = s.session_id order by e.sequence desc limit 1) as last_event
         from sessions s
        where exists (select 1 from turns t where t.session_id = s.session_id
                         and t.state in ('queued', 'running'))`,
    )
    .catch(() => ({ rows: [] }));
  return found.rows.map(
    (row) =>
      `session ${row.session_id}: state ${row.state}${row.leased ? ', leased' : ''}; open turns ${row.open_turns}; requests ${row.requests ?? 'none'}; last event ${row.last_event ?? 'none'}`,
  );
}

async function openTurns(db: Db): Promise<number> {
  const found = await db
    .query<{ open: number }>(
      `select count(*)::int as open from turns where state in ('queued', 'running')`,
    )
    .catch(() => ({ rows: [{ open: -1 }] }));
  return found.rows[0]?.open ?? -1;
}

/**
 * Approves each waiting request once (`tried` remembers them across rounds), as a person
 * would whose client moved on; returns how many answers were acknowledged with 200.
 */
export async function approveWaiting(
  requests: { session_id: string; request_id: string; expected_sequence: number }[],
  tried: Set<string>,
  apis: Apis,
  random: Random,
): Promise<number> {
  let answered = 0;
  for (const request of requests) {
    if (tried.has(request.request_id)) continue;
    tried.add(request.request_id);
    const answer = await apis.send(
      'POST',
      `/api/v1/chat/sessions/${request.session_id}/inputs/${request.request_id}`,
      {
        expected_sequence: request.expected_sequence,
        approved: true,
        response: { reason: 'drain' },
      },
      { deadline: Date.now() + 10_000, random },
    );
    if (answer?.status === 200) answered += 1;
  }
  return answered;
}
