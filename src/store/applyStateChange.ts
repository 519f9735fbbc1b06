import { newEvent } from '../protocol/events.js';
import { journalEvents } from './appendEvents.js';
import type { Queryable } from './db.js';
import type { BufferedEffect, StateEffect } from './types.js';

export type FoldedStateChange = Omit<StateEffect, 'kind' | 'effect_id'>;

/**
 * A turn's state effects folded into the one change its commit applies: the last data,
 * the last result set (if any), and whether any of them completed the session.
 */
export function foldStateEffects(effects: readonly BufferedEffect[]): FoldedStateChange | null {
  let folded = null as FoldedStateChange | null;
  for (const effect of effects) {
    if (effect.kind !== 'state') continue;
    const before = folded;
    folded = {
      ...(before && 'result' in before ? { result: before.result } : {}),
      ...('result' in effect ? { result: effect.result } : {}),
      data: effect.data,
      complete: (before?.complete ?? false) || effect.complete,
    };
  }
  return folded;
}

/**
 * Writes a session's new domain state (docs/governance.md, "Sessions with state") inside
 * the transaction that commits the turn which made it, right after that commit's
 * statement (which holds the session row): the whole new `data`, the `result` when the
 * turn set one. The value is absolute, so a commit retried by a new owner writes the same
 * thing once more, never a patch twice.
 *
 * A completing change closes the session: its lifecycle state becomes `closed`, its lease
 * is released, and the turns admitted since the burst began — which no turn will answer
 * now — end with one `error` event (`session_closed`). Returns whether it closed.
 */
export async function applyStateChange(
  tx: Queryable,
  sessionId: string,
  change: FoldedStateChange,
): Promise<{ closed: boolean }> {
  const hasResult = 'result' in change;
  await tx.query(
    `update sessions
        set data = $2::jsonb,
            result = case when $3 then $4::jsonb else result end
      where session_id = $1`,
    [
      sessionId,
      JSON.stringify(change.data),
      hasResult,
      hasResult ? JSON.stringify(change.result ?? null) : null,
    ],
  );
  if (!change.complete) return { closed: false };
  const left = await tx.query<{ tenant: string; turn_id: string }>(
    `select t.tenant, t.turn_id
       from sessions s
       join turns t on t.tenant = s.tenant and t.session_id = s.session_id
      where s.session_id = $1 and t.state = 'queued' and t.position > s.input_cursor
      order by t.position`,
    [sessionId],
  );
  const first = left.rows[0];
  if (first) {
    const turnIds = left.rows.map((row) => row.turn_id);
    await tx.query(
      `update turns set state = 'error', answered_by = nullif($3, turn_id), completed_at = now()
        where tenant = $1 and turn_id = any($2::text[])`,
      [first.tenant, turnIds, first.turn_id],
    );
    await journalEvents(tx, sessionId, [
      newEvent('error', first.turn_id, {
        code: 'session_closed',
        message: 'the session was completed before this turn ran',
        turn_ids: turnIds,
      }),
    ]);
  }
  await tx.query(
    `update sessions
        set state = 'closed', input_cursor = input_count,
            lease_token = null, lease_owner = null, lease_expires_at = null
      where session_id = $1`,
    [sessionId],
  );
  return { closed: true };
}
