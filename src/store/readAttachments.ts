import type { Queryable } from './db.js';
import type { AttachmentMeta } from './createAttachment.js';

export interface Attachment extends AttachmentMeta {
  data: Uint8Array;
}

/**
 * Attachments of one session by id, with their bytes, in the order asked. Tenant and
 * session are part of the lookup: an id from another tenant or session is simply absent
 * (the caller answers 404). The runtime reads a turn's images through this too.
 */
export async function readAttachments(
  db: Queryable,
  tenant: string,
  sessionId: string,
  attachmentIds: string[],
): Promise<Attachment[]> {
  if (attachmentIds.length === 0) return [];
  const found = await db.query<Attachment>(
    `select attachment_id, session_id, media_type, bytes, sha256, created_at, data
       from attachments
      where tenant = $1 and session_id = $2 and attachment_id = any($3::text[])`,
    [tenant, sessionId, attachmentIds],
  );
  const byId = new Map(found.rows.map((row) => [row.attachment_id, row]));
  return attachmentIds.flatMap((id) => {
    const row = byId.get(id);
    // pg returns a Buffer, PGlite a Uint8Array: one type for callers.
    return row ? [{ ...row, data: new Uint8Array(row.data) }] : [];
  });
}

/**
 * One attachment of the tenant by id alone, with its bytes and its session (whether the
 * caller may see that session is the caller's check); null when the tenant has none.
 */
export async function readAttachmentById(
  db: Queryable,
  tenant: string,
  attachmentId: string,
): Promise<Attachment | null> {
  const found = await db.query<Attachment>(
    `select attachment_id, session_id, media_type, bytes, sha256, created_at, data
       from attachments
      where tenant = $1 and attachment_id = $2`,
    [tenant, attachmentId],
  );
  const row = found.rows[0];
  return row ? { ...row, data: new Uint8Array(row.data) } : null;
}
