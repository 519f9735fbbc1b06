import type { Db } from '../../../src/store/db.js';
import type { Ledger } from '../ledger.js';
import { echoOf } from '../messages.js';
import { where, type Findings, type Journal } from './findings.js';

/** What the media checks read beside the journal: the media client's sessions' rows. */
export interface MediaSnapshot {
  attachments: { attachment_id: string; session_id: string }[];
  /** Uploaded photos whose `source` names one of those sessions. */
  photos: { photo_id: string; session_id: string; attachment_id: string | null }[];
  /** Generated photos whose `source` names one of the image turns. */
  generated: { photo_id: string; turn_id: string }[];
  /** The `attachments` column of the media turns. */
  turns: { turn_id: string; attachments: unknown }[];
  /** Every kept speech key, with how many rows hold it. */
  speech: { tenant: string; message_id: string; voice: string; copies: number }[];
}

export interface MediaFigures {
  /** Labels uploaded (each answered at least once). */
  uploads: number;
  /** Attachment rows in their sessions. */
  attachments: number;
  /** Photo rows made from them. */
  photos: number;
  /** Generated photos of the image turns. */
  generated: number;
  /** Replies read aloud, and speech rows kept for them. */
  spoken: number;
  speechRows: number;
}

export async function readMedia(db: Db, ledger: Ledger): Promise<MediaSnapshot> {
  const records = [...ledger.media.values()];
  const sessions = records.map((record) => record.sessionId);
  const labels = records.map((record) => record.label);
  const attachments = await db.query<MediaSnapshot['attachments'][number]>(
    'select attachment_id, session_id from attachments where session_id = any($1::text[])',
    [sessions],
  );
  const photos = await db.query<MediaSnapshot['photos'][number]>(
    `select photo_id, source->>'session_id' as session_id,
            source->>'attachment_id' as attachment_id
       from photos where origin = 'upload' and source->>'session_id' = any($1::text[])`,
    [sessions],
  );
  const imageTurns = records.flatMap((record) => (record.imageTurnId ? [record.imageTurnId] : []));
  const generated = await db.query<MediaSnapshot['generated'][number]>(
    `select photo_id, source->>'turn_id' as turn_id
       from photos where origin = 'generated' and source->>'turn_id' = any($1::text[])`,
    [imageTurns],
  );
  const turns = await db.query<MediaSnapshot['turns'][number]>(
    'select turn_id, attachments from turns where turn_id = any($1::text[])',
    [labels],
  );
  const speech = await db.query<MediaSnapshot['speech'][number]>(
    `select tenant, message_id, voice, count(*)::int as copies
       from speech group by tenant, message_id, voice`,
  );
  return {
    attachments: attachments.rows,
    photos: photos.rows,
    generated: generated.rows,
    turns: turns.rows,
    speech: speech.rows,
  };
}

/**
 * The media client's uploads against the database (mediaClient.ts):
 * - `upload stored once` (lost / doubled): each label's session holds exactly one
 *   attachment, the one every answer named, however often the upload was sent with its
 *   `Idempotency-Key`;
 * - `photo stored once` (lost / doubled): exactly one photo of that session, made from
 *   that attachment;
 * - `turn carries its attachment` (mismatch): the acknowledged turn's `attachments` names
 *   exactly that attachment;
 * - `media reply answers its turn` (mismatch): its `done` replies with the demo model's
 *   echo of its message (then a note of the image the model was not shown);
 * - `speech kept once` (lost / doubled): a reply read aloud has its speech kept (the
 *   soak runs with `speech.cache` on), and no (tenant, message, voice) is kept twice;
 * - `generated image stored once` (lost / doubled): an image turn that ended `done` has
 *   exactly one generated photo, however often its call ran.
 */
export function checkMedia(
  journal: Journal,
  media: MediaSnapshot,
  ledger: Ledger,
  findings: Findings,
): MediaFigures {
  const attachmentsOf = groupBy(media.attachments, (row) => row.session_id);
  const photosOf = groupBy(media.photos, (row) => row.session_id);
  const turnRows = new Map(media.turns.map((row) => [row.turn_id, row]));
  const kept = groupBy(media.speech, (row) => row.message_id);
  let spoken = 0;
  for (const record of ledger.media.values()) {
    const { label, sessionId, attachmentId } = record;
    const attachments = attachmentsOf.get(sessionId) ?? [];
    if (attachments.length !== 1) {
      findings.add(
        attachments.length === 0 ? 'lost' : 'doubled',
        'upload stored once',
        `upload ${label}: session ${sessionId} holds ${attachments.length} attachments (${attachments.map((row) => row.attachment_id).join(', ')})`,
      );
    } else if (attachments[0]?.attachment_id !== attachmentId) {
      findings.add(
        'mismatch',
        'upload stored once',
        `upload ${label}: answered ${attachmentId}, session ${sessionId} holds ${attachments[0]?.attachment_id}`,
      );
    }
    const photos = photosOf.get(sessionId) ?? [];
    const fromIt = photos.filter((photo) => photo.attachment_id === attachmentId);
    if (photos.length !== 1 || fromIt.length !== 1) {
      findings.add(
        photos.length === 0 ? 'lost' : photos.length > 1 ? 'doubled' : 'mismatch',
        'photo stored once',
        `upload ${label}: ${photos.length} photos of session ${sessionId}, ${fromIt.length} of attachment ${attachmentId}`,
      );
    }
    const turn = ledger.turns.get(label);
    const row = turnRows.get(label);
    if (turn && row && !sameList(row.attachments, [attachmentId])) {
      findings.add(
        'mismatch',
        'turn carries its attachment',
        `turn ${label}: attachments ${JSON.stringify(row.attachments)}, uploaded ${attachmentId}`,
      );
    }
    const end = journal.terminalOf(label);
    if (turn && end?.type === 'done') {
      const content = String(end.payload?.final_message?.content ?? '');
      const echo = echoOf(turn.message);
      if (content !== echo && !content.startsWith(`${echo} `)) {
        findings.add(
          'mismatch',
          'media reply answers its turn',
          `${where(end)}: reply "${content.slice(0, 60)}" to ${label} does not begin "${echo.slice(0, 60)}"`,
        );
      }
    }
    if (record.spokenMessageId !== null) {
      spoken += 1;
      if (!kept.has(record.spokenMessageId)) {
        findings.add(
          'lost',
          'speech kept once',
          `upload ${label}: reply ${record.spokenMessageId} was read aloud and no speech of it is kept`,
        );
      }
    }
  }
  const generatedBy = groupBy(media.generated, (row) => row.turn_id);
  for (const record of ledger.media.values()) {
    if (!record.imageTurnId) continue;
    const made = generatedBy.get(record.imageTurnId) ?? [];
    if (made.length !== 1) {
      findings.add(
        made.length === 0 ? 'lost' : 'doubled',
        'generated image stored once',
        `${record.imageTurnId}: ${made.length} generated photos (${made.map((row) => row.photo_id).join(', ')})`,
      );
    }
  }
  for (const row of media.speech) {
    if (row.copies > 1) {
      findings.add(
        'doubled',
        'speech kept once',
        `message ${row.message_id} in voice ${row.voice} (tenant ${row.tenant}) is kept ${row.copies} times`,
      );
    }
  }
  return {
    uploads: ledger.media.size,
    attachments: media.attachments.length,
    photos: media.photos.length,
    generated: media.generated.length,
    spoken,
    speechRows: media.speech.reduce((sum, row) => sum + row.copies, 0),
  };
}

function groupBy<Row>(rows: Row[], key: (row: Row) => string): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  for (const row of rows) {
    let list = groups.get(key(row));
    if (!list) groups.set(key(row), (list = []));
    list.push(row);
  }
  return groups;
}

function sameList(value: unknown, expected: string[]): boolean {
  return (
    Array.isArray(value) &&
    value.length === expected.length &&
    value.every((item, index) => item === expected[index])
  );
}
