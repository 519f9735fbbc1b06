import { createHash } from 'node:crypto';
import type { Queryable } from './db.js';

export interface AttachmentMeta {
  attachment_id: string;
  session_id: string;
  media_type: string;
  bytes: number;
  sha256: string;
  created_at: Date;
}

/**
 * Stores an uploaded image (already checked by the API) in the caller's session. An id
 * already stored (an upload retried with its `Idempotency-Key`, whose id is derived from
 * it) stores nothing: `replayed` with the stored row, `conflicting` if its bytes or type
 * are not these. Null when the session is gone (deleted meanwhile).
 */
export async function createAttachment(
  db: Queryable,
  attachment: {
    attachmentId: string;
    tenant: string;
    sessionId: string;
    mediaType: string;
    data: Uint8Array;
    uploadedBy: string;
  },
): Promise<(AttachmentMeta & { replayed: boolean; conflicting: boolean }) | null> {
  const sha256 = createHash('sha256').update(attachment.data).digest('hex');
  const inserted = await db.query<AttachmentMeta>(
    `insert into attachments (attachment_id, tenant, session_id, media_type, bytes, sha256, data, uploaded_by)
     select $1, s.tenant, s.session_id, $4::text, $5::integer, $6::text, $7::bytea, $8::text
       from sessions s
      where s.tenant = $2 and s.session_id = $3
        for key share
     on conflict (attachment_id) do nothing
     returning attachment_id, session_id, media_type, bytes, sha256, created_at`,
    [
      attachment.attachmentId,
      attachment.tenant,
      attachment.sessionId,
      attachment.mediaType,
      attachment.data.byteLength,
      sha256,
      attachment.data,
      attachment.uploadedBy,
    ],
  );
  const row = inserted.rows[0];
  if (row) return { ...row, replayed: false, conflicting: false };
  const stored = await db.query<AttachmentMeta>(
    `select attachment_id, session_id, media_type, bytes, sha256, created_at
       from attachments where tenant = $1 and attachment_id = $2`,
    [attachment.tenant, attachment.attachmentId],
  );
  const found = stored.rows[0];
  if (!found) return null;
  const conflicting =
    found.sha256 !== sha256 ||
    found.media_type !== attachment.mediaType ||
    found.session_id !== attachment.sessionId;
  return { ...found, replayed: true, conflicting };
}
