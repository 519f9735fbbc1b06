import type { Db } from './db.js';
import { notifyWakeup } from './wakeups.js';

/** The A2A version a push config was made with (`a2a_push_configs.wire`). */
export type A2aWire = '1.0' | '0.3';

/** An A2A push config as stored (a2a_push_configs): where and how a task's updates go. */
export interface A2aPushConfigRow {
  push_id: string;
  task_id: string;
  config_id: string;
  url: string;
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
}

export const a2aPushConfigColumns =
  'push_id, task_id, config_id, url, token, auth_scheme, auth_credentials';

/**
 * Saves a user's push config of a task: a new one starts with the task's status as it
 * stands (`createdSequence`: the journal's end now, or the task's start for a config given
 * with the message that admits it); one of the same id is replaced — its URL and
 * credentials, not how far its notifications went, so none is sent twice or skipped.
 * The session's wake-up tells the webhook loop (in whichever process) to follow it now.
 */
export async function saveA2aPushConfig(
  db: Db,
  input: {
    pushId: string;
    tenant: string;
    taskId: string;
    owner: string;
    configId: string;
    sessionId: string;
    url: string;
    token: string | null;
    authScheme: string | null;
    authCredentials: string | null;
    fromSequence: number;
    /** null: the journal's end now. */
    createdSequence: number | null;
    /** The A2A version the config was made with: its notifications' shape. */
    wire: A2aWire;
  },
): Promise<A2aPushConfigRow> {
  return db.transaction(async (tx) => {
    const saved = await tx.query<A2aPushConfigRow>(
      `insert into a2a_push_configs (push_id, tenant, task_id, owner, config_id, session_id, url,
                                   token, auth_scheme, auth_credentials, from_sequence,
                                   created_sequence, wire)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
             coalesce($12::bigint, (select last_sequence from sessions where session_id = $6)),
             $13)
     on conflict (tenant, task_id, owner, config_id) do update
       set url = excluded.url, token = excluded.token, auth_scheme = excluded.auth_scheme,
           auth_credentials = excluded.auth_credentials, wire = excluded.wire
     returning ${a2aPushConfigColumns}`,
      [
        input.pushId,
        input.tenant,
        input.taskId,
        input.owner,
        input.configId,
        input.sessionId,
        input.url,
        input.token,
        input.authScheme,
        input.authCredentials,
        input.fromSequence,
        input.createdSequence,
        input.wire,
      ],
    );
    const session = await tx.query<{ last_sequence: number }>(
      'select last_sequence from sessions where session_id = $1',
      [input.sessionId],
    );
    await notifyWakeup(tx, {
      kind: 'events',
      sessionId: input.sessionId,
      sequence: session.rows[0]?.last_sequence ?? 0,
    });
    return saved.rows[0] as A2aPushConfigRow;
  });
}
