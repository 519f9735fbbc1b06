import type { Queryable } from './db.js';

/** Whether `sequence` is a checkpoint of the session still in its effective history. */
export async function isLiveCheckpoint(
  db: Queryable,
  sessionId: string,
  sequence: number,
): Promise<{ exists: boolean; rewound: boolean }> {
  const found = await db.query<{ rewound: boolean }>(
    `select exists (select 1 from rewinds w where w.session_id = $1
                      and $2 > w.to_sequence and $2 < w.at_sequence) as rewound
       from events e where e.session_id = $1 and e.sequence = $2 and e.type = 'done'`,
    [sessionId, sequence],
  );
  const row = found.rows[0];
  return { exists: row !== undefined, rewound: row?.rewound ?? false };
}
