import { transcriptJoin, turnIdsSql } from './eventRows.js';
import type { Queryable } from './db.js';

/** A checkpoint: the session as it stood after one `done`. */
export interface Checkpoint {
  /** The `done` event's sequence: what fork's `at_sequence` and rewind's `to_sequence` name. */
  sequence: number;
  turn_ids: string[];
  message_id: string | null;
  /** Transcript messages up to and including its reply. */
  transcript_position: number;
  /** Usage of the session's provider calls up to it (its journaled `usage` events). */
  usage: { input_tokens: number; output_tokens: number; cost_usd: number };
  /** A later rewind went back before it: the next turns' history leaves it out. */
  rewound: boolean;
  at: string;
}

interface CheckpointRow {
  sequence: number;
  turn_ids: string[];
  message_id: string | null;
  transcript_position: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  rewound: boolean;
  at: Date;
}

/**
 * Every `done` of a session is a checkpoint, read from the journal: its
 * sequence, its position in the transcript and the usage so far (a running sum of the
 * `usage` events). Checkpoints whose events retention pruned are gone with them.
 */
export async function listCheckpoints(
  db: Queryable,
  sessionId: string,
  options: { after: number; limit: number },
): Promise<{ items: Checkpoint[]; next_cursor: string | null }> {
  const found = await db.query<CheckpointRow>(
    `with marks as (
       select e.sequence, e.type, ${turnIdsSql('e')} as turn_ids, m.message_id, e.at,
              sum(case when e.type = 'usage' then (e.payload ->> 'input_tokens')::bigint else 0 end)
                over w as input_tokens,
              sum(case when e.type = 'usage' then (e.payload ->> 'output_tokens')::bigint else 0 end)
                over w as output_tokens,
              sum(case when e.type = 'usage' then coalesce((e.payload ->> 'cost_usd')::numeric, 0) else 0 end)
                over w as cost_usd
         from events e
         ${transcriptJoin}
        where e.session_id = $1 and e.type in ('done', 'usage')
       window w as (order by e.sequence)
     )
     select k.sequence, k.turn_ids, k.message_id, k.at,
            k.input_tokens, k.output_tokens, k.cost_usd,
            (select count(*) from messages m
              where m.session_id = $1 and m.sequence <= k.sequence)::bigint as transcript_position,
            exists (select 1 from rewinds w where w.session_id = $1
                      and k.sequence > w.to_sequence and k.sequence < w.at_sequence) as rewound
       from marks k
      where k.type = 'done' and k.sequence > $2
      order by k.sequence
      limit $3`,
    [sessionId, options.after, options.limit + 1],
  );
  const rows = found.rows.slice(0, options.limit);
  const last = rows[rows.length - 1];
  return {
    items: rows.map((row) => ({
      sequence: row.sequence,
      turn_ids: row.turn_ids,
      message_id: row.message_id,
      transcript_position: row.transcript_position,
      usage: {
        input_tokens: row.input_tokens,
        output_tokens: row.output_tokens,
        cost_usd: row.cost_usd,
      },
      rewound: row.rewound,
      at: row.at.toISOString(),
    })),
    next_cursor: found.rows.length > options.limit && last ? String(last.sequence) : null,
  };
}
