/** Speech as the database keeps it: a message read aloud (the speech table), and its bill. */
import type { Queryable } from './db.js';

/** One message of a session, by id, within the tenant: null when the session has none. */
export async function findSessionMessage(
  db: Queryable,
  tenant: string,
  sessionId: string,
  messageId: string,
): Promise<{ message_id: string; turn_id: string | null; content: string } | null> {
  const found = await db.query<{ message_id: string; turn_id: string | null; content: string }>(
    `select message_id, turn_id, content from messages
      where tenant = $1 and session_id = $2 and message_id = $3`,
    [tenant, sessionId, messageId],
  );
  return found.rows[0] ?? null;
}

/** A message's kept speech in a voice, if it was made and kept. */
export async function readSpeech(
  db: Queryable,
  tenant: string,
  messageId: string,
  voice: string,
): Promise<{ media_type: string; audio: Uint8Array } | null> {
  const found = await db.query<{ media_type: string; audio: Uint8Array }>(
    'select media_type, audio from speech where tenant = $1 and message_id = $2 and voice = $3',
    [tenant, messageId, voice],
  );
  const row = found.rows[0];
  // pg returns a Buffer, PGlite a Uint8Array: one type for callers.
  return row ? { media_type: row.media_type, audio: new Uint8Array(row.audio) } : null;
}

/**
 * Keeps a message's speech in a voice. The message must still be there (a session deleted
 * meanwhile keeps nothing); speech made twice at once keeps the first.
 */
export async function saveSpeech(
  db: Queryable,
  row: { tenant: string; messageId: string; voice: string; mediaType: string; audio: Uint8Array },
): Promise<void> {
  await db.query(
    `insert into speech (tenant, message_id, voice, media_type, audio)
     select m.tenant, m.message_id, $3::text, $4::text, $5::bytea
       from messages m
      where m.tenant = $1 and m.message_id = $2
     on conflict (tenant, message_id, voice) do nothing`,
    [row.tenant, row.messageId, row.voice, row.mediaType, row.audio],
  );
}

/**
 * Bills one synthesis: a `usage` row of purpose `speech`, its size in `characters` (tokens
 * 0). Session, turn and agent are those of the message read aloud, null for text spoken
 * outside a conversation; the user is whoever asked.
 */
export async function recordSpeechUsage(
  db: Queryable,
  row: {
    tenant: string;
    sessionId: string | null;
    turnId: string | null;
    agent: string | null;
    user: string;
    model: string;
    characters: number;
    costUsd: number;
    latencyMs: number;
    /** Speech made (default), or speech heard (characters: of the text heard). */
    purpose?: 'speech' | 'transcription';
  },
): Promise<void> {
  await db.query(
    `insert into usage (tenant, session_id, turn_id, agent, user_name, model, purpose, outcome,
                        characters, cost_usd, latency_ms)
     values ($1, $2, $3, $4, $5, $6, $10, 'ok', $7, $8, $9)`,
    [
      row.tenant,
      row.sessionId,
      row.turnId,
      row.agent,
      row.user,
      row.model,
      row.characters,
      row.costUsd,
      Math.round(row.latencyMs),
      row.purpose ?? 'speech',
    ],
  );
}
