/** The photo library (the photos table; docs/PROTOCOL.md, "Photos"): a user's own images. */
import type { Queryable } from './db.js';
import { encodeCursor } from './listSessions.js';

export type PhotoOrigin = 'upload' | 'generated';

/** A photo as the API shows it (its bytes are read apart: `readPhotoContent`). */
export interface PhotoView {
  photo_id: string;
  owner: string;
  origin: PhotoOrigin;
  title: string | null;
  source: Record<string, unknown>;
  media_type: string;
  size: number;
  created_at: string;
  updated_at: string;
  content_url: string;
}

/** What a new photo is made of; its id is made by the caller (`newPhotoId`). */
export interface NewPhoto {
  photoId: string;
  tenant: string;
  owner: string;
  origin: PhotoOrigin;
  title: string | null;
  /** Where it came from: `{session_id, attachment_id}` for a chat upload, etc. */
  source: Record<string, unknown>;
  /** One of image/png, image/jpeg, image/webp, image/gif (the table refuses others). */
  mediaType: string;
  bytes: Uint8Array;
}

interface PhotoRow {
  photo_id: string;
  owner: string;
  origin: PhotoOrigin;
  title: string | null;
  source: Record<string, unknown>;
  media_type: string;
  size: number;
  created_at: Date;
  updated_at: Date;
}

const columns = 'photo_id, owner, origin, title, source, media_type, size, created_at, updated_at';

/** Where a photo's bytes are served. */
export function photoContentUrl(photoId: string): string {
  return `/api/v1/photos/${encodeURIComponent(photoId)}/content`;
}

function viewOf(row: PhotoRow): PhotoView {
  return {
    photo_id: row.photo_id,
    owner: row.owner,
    origin: row.origin,
    title: row.title,
    source: row.source,
    media_type: row.media_type,
    size: row.size,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    content_url: photoContentUrl(row.photo_id),
  };
}

/**
 * Inserts; on a conflicting photo_id does nothing (idempotent by id) and returns the row
 * already stored under it. Times are kept to the millisecond, so the listing's cursor (the
 * last item's `created_at` as the API shows it) names a row exactly.
 */
export async function insertPhoto(db: Queryable, photo: NewPhoto): Promise<PhotoView> {
  const inserted = await db.query<PhotoRow>(
    `insert into photos (photo_id, tenant, owner, origin, title, source, media_type, bytes, size,
                         created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6::jsonb, $7, $8::bytea, $9::integer,
             date_trunc('milliseconds', now()), date_trunc('milliseconds', now()))
     on conflict (photo_id) do nothing
     returning ${columns}`,
    [
      photo.photoId,
      photo.tenant,
      photo.owner,
      photo.origin,
      photo.title,
      JSON.stringify(photo.source),
      photo.mediaType,
      photo.bytes,
      photo.bytes.byteLength,
    ],
  );
  const row =
    inserted.rows[0] ??
    (
      await db.query<PhotoRow>(
        `select ${columns} from photos where photo_id = $1 and tenant = $2`,
        [photo.photoId, photo.tenant],
      )
    ).rows[0];
  if (!row) throw new Error(`photo ${photo.photoId} neither inserted nor found`);
  return viewOf(row);
}

/** One photo of the owner's in the tenant; null for a missing one and for anyone else's. */
export async function readPhoto(
  db: Queryable,
  tenant: string,
  owner: string,
  photoId: string,
): Promise<PhotoView | null> {
  const found = await db.query<PhotoRow>(
    `select ${columns} from photos where photo_id = $1 and tenant = $2 and owner = $3`,
    [photoId, tenant, owner],
  );
  const row = found.rows[0];
  return row ? viewOf(row) : null;
}

/** A photo's bytes and stored type (scoped as `readPhoto`). */
export async function readPhotoContent(
  db: Queryable,
  tenant: string,
  owner: string,
  photoId: string,
): Promise<{ mediaType: string; bytes: Uint8Array } | null> {
  const found = await db.query<{ media_type: string; bytes: Uint8Array }>(
    'select media_type, bytes from photos where photo_id = $1 and tenant = $2 and owner = $3',
    [photoId, tenant, owner],
  );
  const row = found.rows[0];
  return row ? { mediaType: row.media_type, bytes: row.bytes } : null;
}

/** Renames a photo (null clears its title); null when the owner has no such photo. */
export async function updatePhotoTitle(
  db: Queryable,
  tenant: string,
  owner: string,
  photoId: string,
  title: string | null,
): Promise<PhotoView | null> {
  const updated = await db.query<PhotoRow>(
    `update photos set title = $4, updated_at = date_trunc('milliseconds', now())
      where photo_id = $1 and tenant = $2 and owner = $3
      returning ${columns}`,
    [photoId, tenant, owner, title],
  );
  const row = updated.rows[0];
  return row ? viewOf(row) : null;
}

/** False when the owner has no such photo. */
export async function deletePhoto(
  db: Queryable,
  tenant: string,
  owner: string,
  photoId: string,
): Promise<boolean> {
  const deleted = await db.query(
    'delete from photos where photo_id = $1 and tenant = $2 and owner = $3',
    [photoId, tenant, owner],
  );
  return deleted.rowCount > 0;
}

/** A listing's position: the `created_at` and `photo_id` of the last photo shown. */
export interface PhotoCursor {
  createdAt: string;
  photoId: string;
}

/**
 * The owner's photos newest first (created_at, then id, so one millisecond's photos keep
 * their order), of one origin when given. The cursor is the last item's (created_at,
 * photo_id): a page boundary stays put while photos are added.
 */
export async function listPhotos(
  db: Queryable,
  filter: { tenant: string; owner: string; origin: PhotoOrigin | null },
  page: { limit: number; cursor: PhotoCursor | null },
): Promise<{ items: PhotoView[]; next_cursor: string | null }> {
  const found = await db.query<PhotoRow>(
    `select ${columns} from photos
      where tenant = $1 and owner = $2 and ($3::text is null or origin = $3)
        and ($4::timestamptz is null or (created_at, photo_id) < ($4::timestamptz, $5::text))
      order by created_at desc, photo_id desc
      limit $6`,
    [
      filter.tenant,
      filter.owner,
      filter.origin,
      page.cursor?.createdAt ?? null,
      page.cursor?.photoId ?? null,
      page.limit + 1,
    ],
  );
  const rows = found.rows.slice(0, page.limit);
  const last = rows[rows.length - 1];
  return {
    items: rows.map(viewOf),
    next_cursor:
      found.rows.length > page.limit && last
        ? encodeCursor([last.created_at.toISOString(), last.photo_id])
        : null,
  };
}
