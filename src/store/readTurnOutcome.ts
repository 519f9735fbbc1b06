import { eventRowsFrom, turnIdsSql } from './eventRows.js';
import type { InputKind } from '../protocol/events.js';
import type { Queryable } from './db.js';

/** A pending input request of a session, as an execution's router needs it. */
export interface PendingRequest {
  request_id: string;
  turn_id: string;
  kind: InputKind;
  call_id: string;
  tool: string | null;
  arguments: unknown;
  prompt: string | null;
  expected_sequence: number;
}

/** Where an admitted turn stands, as its session's journal tells. */
export type TurnOutcome =
  | { kind: 'missing' }
  | { kind: 'pending' }
  | { kind: 'waiting'; requests: PendingRequest[] }
  | { kind: 'done'; content: string }
  | { kind: 'error'; code: string; message: string }
  | { kind: 'cancelled' };

interface OutcomeRow {
  state: string;
  terminal: {
    type: string;
    payload: { code?: string; message?: string };
    content: string | null;
  } | null;
  reply: string | null;
  requests: PendingRequest[];
}

/**
 * Reads how a turn ended from its session's journal: the `done`, `error` or `cancelled`
 * event that names it (a turn may have been folded into another's burst, so the event is
 * found by `turn_ids`, and a `done`'s text is its transcript row). A turn still running
 * whose session waits for a person reports the pending requests. If retention pruned the
 * event, the turn row and the transcript still tell.
 */
export async function readTurnOutcome(
  db: Queryable,
  sessionId: string,
  turnId: string,
): Promise<TurnOutcome> {
  const found = await db.query<OutcomeRow>(
    {
      name: 'read_turn_outcome',
      text: `
        select t.state,
               (select json_build_object('type', e.type, 'payload', e.payload,
                                         'content', m.content)
                  from ${eventRowsFrom}
                 where e.session_id = t.session_id and e.type in ('done', 'error', 'cancelled')
                   and e.sequence > t.admitted_sequence and ${turnIdsSql('e')} ? t.turn_id
                 order by e.sequence limit 1) as terminal,
               (select m.content from messages m
                 where m.session_id = t.session_id and m.turn_id = coalesce(t.answered_by, t.turn_id)
                   and m.role = 'assistant') as reply,
               (select coalesce(json_agg(json_build_object(
                         'request_id', r.request_id, 'turn_id', r.turn_id, 'kind', r.kind,
                         'call_id', r.call_id, 'tool', r.tool, 'arguments', r.arguments,
                         'prompt', e.payload ->> 'prompt',
                         'expected_sequence', r.expected_sequence) order by r.request_id), '[]')
                  from input_requests r
                  left join events e on e.session_id = r.session_id
                                    and e.sequence = r.expected_sequence
                 where r.session_id = t.session_id and r.state = 'pending') as requests
          from turns t
         where t.session_id = $1 and t.turn_id = $2`,
    },
    [sessionId, turnId],
  );
  const row = found.rows[0];
  if (!row) return { kind: 'missing' };
  const terminal = row.terminal;
  if (terminal?.type === 'done') return { kind: 'done', content: terminal.content ?? '' };
  if (terminal?.type === 'error') {
    return {
      kind: 'error',
      code: terminal.payload.code ?? 'error',
      message: terminal.payload.message ?? '',
    };
  }
  if (terminal?.type === 'cancelled') return { kind: 'cancelled' };
  if (row.state === 'done') return { kind: 'done', content: row.reply ?? '' };
  if (row.state === 'error') return { kind: 'error', code: 'error', message: 'the turn failed' };
  if (row.state === 'cancelled') return { kind: 'cancelled' };
  if (row.requests.length > 0) return { kind: 'waiting', requests: row.requests };
  return { kind: 'pending' };
}
