import type { Queryable } from './db.js';

export interface AttachmentSummary {
  attachment_id: string;
  media_type: string;
  bytes: number;
}

/**
 * What a prompt says of images it does not show (type and size), without reading their
 * bytes: a model without vision gets a note per image.
 */
export async function attachmentMeta(
  db: Queryable,
  tenant: string,
  sessionId: string,
  attachmentIds: string[],
): Promise<Map<string, AttachmentSummary>> {
  if (attachmentIds.length === 0) return new Map();
  const found = await db.query<AttachmentSummary>(
    `select attachment_id, media_type, bytes from attachments
      where tenant = $1 and session_id = $2 and attachment_id = any($3::text[])`,
    [tenant, sessionId, attachmentIds],
  );
  return new Map(found.rows.map((row) => [row.attachment_id, row]));
}
