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
 * Stores an uploaded image (already checked by the API) in the caller's session; null when
 * the session is gone (deleted meanwhile).
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
): Promise<AttachmentMeta | null> {
  const inserted = await db.query<AttachmentMeta>(
    `insert into attachments (attachment_id, tenant, session_id, media_type, bytes, sha256, data, uploaded_by)
     select $1, s.tenant, s.session_id, $4::text, $5::integer, $6::text, $7::bytea, $8::text
       from sessions s
      where s.tenant = $2 and s.session_id = $3
        for key share
     returning attachment_id, session_id, media_type, bytes, sha256, created_at`,
    [
      attachment.attachmentId,
      attachment.tenant,
      attachment.sessionId,
      attachment.mediaType,
      attachment.data.byteLength,
      createHash('sha256').update(attachment.data).digest('hex'),
      attachment.data,
      attachment.uploadedBy,
    ],
  );
  return inserted.rows[0] ?? null;
}
