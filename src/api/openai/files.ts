import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../../errors.js';
import { keyedId, newPhotoId } from '../../ids.js';
import { bytesMatch, imageTypes } from '../../media/imageTypes.js';
import {
  deletePhoto,
  insertPhoto,
  listPhotos,
  readPhoto,
  readPhotoContent,
  type PhotoView,
} from '../../store/photos.js';
import {
  declaredMediaType,
  idempotencyKeyParameter,
  route,
  routeOptions,
  typed,
} from '../contract.js';
import type { ApiDeps } from '../deps.js';
import { sendPhoto } from '../photos.js';
import { idempotencyKeyOf, isStorableText, pathId } from '../validate.js';
import { openaiBase } from './contracts.js';

/**
 * OpenAI's Files API over the caller's photo library (docs/protocols.md, "Files"): a file
 * is a photo, its id the photo's id, so every image of the library (uploaded here or
 * through `/api/v1/photos`, landed by a chat upload, generated) is a file, and a file
 * uploaded here is a photo of the library. Images only; the bytes decide the type. The
 * library is personal: another user's or tenant's id answers 404 like a missing one.
 */

const purposes = ['vision', 'user_data'] as const;
type Purpose = (typeof purposes)[number];

/** What the form around the file adds: boundaries, part headers, a filename. */
const formOverheadBytes = 16_384;
const maxFilename = 200;

const fileObject = z
  .object({
    id: z.string(),
    object: z.literal('file'),
    bytes: z.number(),
    created_at: z.number(),
    filename: z.string(),
    purpose: z.enum(purposes),
    status: z.literal('processed'),
  })
  .meta({ id: 'OpenaiFile' });

const listQuery = z
  .object({
    after: z.string().optional().meta({ description: 'a file id: the files after it' }),
    limit: z.coerce.number().int().min(1).max(10_000).default(10_000),
    order: z.literal('desc').optional().meta({ description: 'newest first (the only order)' }),
  })
  .strict();

const errors = {
  '401': 'unauthorized',
  '404': "file_not_found (also another user's or tenant's file)",
};

export const openaiFileContracts = {
  upload: route({
    method: 'POST',
    url: `${openaiBase}/files`,
    summary: "OpenAI-compatible: upload an image into the caller's photo library",
    description:
      'multipart/form-data with `file` (png, jpeg, webp or gif: the bytes decide) and `purpose` (`vision` or `user_data`).',
    rawBody: { contentTypes: ['multipart/form-data'] },
    parameters: [idempotencyKeyParameter],
    responses: { '200': fileObject },
    errors: {
      '400':
        'unsupported_file (not an image the library takes), invalid_request (purpose, a missing or empty file, another field)',
      '401': 'unauthorized',
      '409': 'idempotency_conflict (the Idempotency-Key was used for another image)',
      '413': 'payload_too_large (limits.attachment_bytes)',
      '415': 'unsupported_media_type (not multipart/form-data)',
    },
  }),
  list: route({
    method: 'GET',
    url: `${openaiBase}/files`,
    summary: "OpenAI-compatible: the caller's files (photos), newest first",
    querystring: listQuery,
    responses: {
      '200': z.object({
        object: z.literal('list'),
        data: z.array(fileObject),
        has_more: z.boolean(),
        first_id: z.string().nullable(),
        last_id: z.string().nullable(),
      }),
    },
    errors: { '400': 'invalid_request, invalid_cursor (after)', '401': 'unauthorized' },
  }),
  get: route({
    method: 'GET',
    url: `${openaiBase}/files/:fileId`,
    summary: 'OpenAI-compatible: one file of the caller',
    responses: { '200': fileObject },
    errors,
  }),
  content: route({
    method: 'GET',
    url: `${openaiBase}/files/:fileId/content`,
    summary: "OpenAI-compatible: a file's bytes, with its media type",
    responses: {
      '200': {
        description: 'The image bytes with their media type',
        content: Object.fromEntries(
          imageTypes.map((type) => [type, { schema: { type: 'string', format: 'binary' } }]),
        ),
      },
    },
    errors,
  }),
  remove: route({
    method: 'DELETE',
    url: `${openaiBase}/files/:fileId`,
    summary: "OpenAI-compatible: delete a file (the photo, from the caller's library)",
    responses: {
      '200': z.object({ id: z.string(), object: z.literal('file'), deleted: z.literal(true) }),
    },
    errors,
  }),
};

const extensions: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
};

/** A photo as an OpenAI File: its title is the filename; the purpose it was uploaded with. */
export function fileOf(photo: PhotoView): z.output<typeof fileObject> {
  const purpose: Purpose = photo.source.purpose === 'user_data' ? 'user_data' : 'vision';
  return {
    id: photo.photo_id,
    object: 'file',
    bytes: photo.size,
    created_at: Math.floor(Date.parse(photo.created_at) / 1000),
    filename: photo.title ?? `${photo.photo_id}.${extensions[photo.media_type] ?? 'img'}`,
    purpose,
    status: 'processed',
  };
}

const notFound = () => new ParleyError('file_not_found', 'no such file', { field: 'file_id' });

/** A form field other than the file, as a string; absent is null. */
function field(form: FormData, name: string): string | null {
  const value = form.get(name);
  if (value === null) return null;
  if (typeof value !== 'string') {
    throw new ParleyError('invalid_request', `${name}: must be a text field`, { field: name });
  }
  return value;
}

/** The body as a form (undici's parser); anything else is refused before a row is read. */
async function formOf(request: FastifyRequest): Promise<FormData> {
  const body = request.body;
  if (!Buffer.isBuffer(body) || body.byteLength === 0) {
    throw new ParleyError('invalid_request', 'the body is empty: send file and purpose', {
      field: 'file',
    });
  }
  try {
    return await new Response(body, {
      headers: { 'content-type': String(request.headers['content-type']) },
    }).formData();
  } catch {
    throw new ParleyError('invalid_request', 'the body is not a multipart/form-data form', {
      field: 'file',
    });
  }
}

/** The upload the form carries, checked as an upload to the library is. */
async function uploadOf(
  form: FormData,
  limitBytes: number,
): Promise<{ purpose: Purpose; title: string | null; mediaType: string; bytes: Buffer }> {
  for (const name of new Set(form.keys())) {
    if (name === 'file' || name === 'purpose') continue;
    const why = name.startsWith('expires_after')
      ? 'a file is kept until it is deleted'
      : 'not a field of an upload';
    throw new ParleyError('invalid_request', `${name}: ${why}`, { field: name });
  }
  const purpose = field(form, 'purpose');
  if (purpose === null || !(purposes as readonly string[]).includes(purpose)) {
    throw new ParleyError(
      'invalid_request',
      'purpose: vision or user_data (this server keeps images only)',
      { field: 'purpose' },
    );
  }
  const file = form.get('file');
  if (file === null || typeof file === 'string') {
    throw new ParleyError('invalid_request', 'file: send the image as a file part', {
      field: 'file',
    });
  }
  const bytes = Buffer.from(await file.arrayBuffer());
  if (bytes.byteLength === 0) {
    throw new ParleyError('invalid_request', 'file: the file is empty', { field: 'file' });
  }
  if (bytes.byteLength > limitBytes) {
    throw new ParleyError('payload_too_large', `file: larger than ${limitBytes} bytes`, {
      limit_bytes: limitBytes,
    });
  }
  const mediaType = imageTypes.find((type) => bytesMatch(type, bytes));
  if (!mediaType) {
    throw new ParleyError('unsupported_file', `file: not one of ${imageTypes.join(', ')}`, {
      field: 'file',
      allowed: imageTypes,
    });
  }
  const name = [...file.name].slice(0, maxFilename).join('');
  if (!isStorableText(name)) {
    throw new ParleyError('invalid_request', 'file: its filename is not storable text', {
      field: 'file',
    });
  }
  return { purpose: purpose as Purpose, title: name.trim() === '' ? null : name, mediaType, bytes };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

/**
 * The Files routes, in the OpenAI plugin's scope (its error shape). The upload has a
 * scope of its own taking only multipart/form-data, as bytes bounded by
 * `limits.attachment_bytes` and the form's overhead; the form is parsed by undici.
 */
export function openaiFileRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const limit = deps.config.limits.attachmentBytes;
  const { upload, list, get, content, remove } = openaiFileContracts;
  const api = typed(app);

  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      'multipart/form-data',
      { parseAs: 'buffer', bodyLimit: limit + formOverheadBytes },
      (_request, body, done) => done(null, body),
    );
    typed(scope).post(
      upload.url,
      {
        ...routeOptions(upload),
        preParsing: async (request: FastifyRequest) => {
          if (declaredMediaType(request) !== 'multipart/form-data') {
            throw new ParleyError('unsupported_media_type', 'send the file as multipart/form-data');
          }
          idempotencyKeyOf(request.headers['idempotency-key']);
        },
      },
      async (request) => {
        const { principal } = request;
        const key = idempotencyKeyOf(request.headers['idempotency-key']);
        const made = await uploadOf(await formOf(request), limit);
        const photoId =
          key === null ? newPhotoId() : keyedId('ph', [principal.tenant, principal.user, key]);
        // A retry with the key answers the file stored by the first, if it has these bytes.
        if (key !== null) {
          const stored = await readPhotoContent(deps.db, principal.tenant, principal.user, photoId);
          if (stored) {
            if (stored.mediaType !== made.mediaType || !sameBytes(stored.bytes, made.bytes)) {
              throw new ParleyError(
                'idempotency_conflict',
                'Idempotency-Key: already used for another image',
              );
            }
            const replayed = await readPhoto(deps.db, principal.tenant, principal.user, photoId);
            if (!replayed) throw notFound();
            return fileOf(replayed);
          }
        }
        const photo = await insertPhoto(deps.db, {
          photoId,
          tenant: principal.tenant,
          owner: principal.user,
          origin: 'upload',
          title: made.title,
          source: { purpose: made.purpose },
          mediaType: made.mediaType,
          bytes: made.bytes,
        });
        return fileOf(photo);
      },
    );
  });

  api.get(list.url, routeOptions(list), async (request) => {
    const { principal } = request;
    const { after, limit: pageSize } = request.query;
    let cursor = null;
    if (after !== undefined) {
      const from = await readPhoto(
        deps.db,
        principal.tenant,
        principal.user,
        pathId(after, 'after'),
      );
      if (!from) {
        throw new ParleyError('invalid_cursor', 'after: no such file', { field: 'after' });
      }
      cursor = { createdAt: from.created_at, photoId: from.photo_id };
    }
    const found = await listPhotos(
      deps.db,
      { tenant: principal.tenant, owner: principal.user, origin: null },
      { limit: pageSize, cursor },
    );
    const data = found.items.map(fileOf);
    return {
      object: 'list' as const,
      data,
      has_more: found.next_cursor !== null,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
    };
  });

  api.get(get.url, routeOptions(get), async (request) => {
    const { principal } = request;
    const fileId = pathId(request.params.fileId, 'file_id');
    const found = await readPhoto(deps.db, principal.tenant, principal.user, fileId);
    if (!found) throw notFound();
    return fileOf(found);
  });

  api.get(content.url, routeOptions(content), async (request, reply) => {
    const { principal } = request;
    const fileId = pathId(request.params.fileId, 'file_id');
    const found = await readPhotoContent(deps.db, principal.tenant, principal.user, fileId);
    if (!found) throw notFound();
    return sendPhoto(reply, found);
  });

  api.delete(remove.url, routeOptions(remove), async (request) => {
    const { principal } = request;
    const fileId = pathId(request.params.fileId, 'file_id');
    if (!(await deletePhoto(deps.db, principal.tenant, principal.user, fileId))) {
      throw notFound();
    }
    return { id: fileId, object: 'file' as const, deleted: true as const };
  });
}
