import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ParleyError } from '../errors.js';
import { keyedId, newPhotoId } from '../ids.js';
import { page, photoView } from '../protocol/rest.js';
import { findVisibleSession } from '../store/findVisibleSession.js';
import {
  deletePhoto,
  insertPhoto,
  listPhotos,
  readPhoto,
  readPhotoContent,
  updatePhotoTitle,
  type NewPhoto,
  type PhotoCursor,
} from '../store/photos.js';
import { readAttachmentById } from '../store/readAttachments.js';
import {
  declaredMediaType,
  idempotencyKeyParameter,
  rawOrJsonBodies,
  route,
  routeOptions,
  typed,
} from './contract.js';
import type { ApiDeps } from './deps.js';
import { bytesMatch, imageTypes, isImageType } from '../media/imageTypes.js';
import { viewerOf } from './sessionAccess.js';
import { idempotencyKeyOf, pathId, text, timeCursor, validate } from './validate.js';

const binary = { type: 'string', format: 'binary' };
const title = text().min(1).max(200);

const listQuery = z
  .object({
    origin: z.enum(['upload', 'generated']).optional(),
    cursor: text().max(500).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();

const createQuery = z
  .object({ title: title.optional().meta({ description: 'the title of a raw upload' }) })
  .strict();

const fromAttachment = z
  .object({
    attachment_id: text().min(1).max(128).meta({
      description: 'an image of a session the caller may see: copied into the library',
    }),
    title: title.nullable().optional(),
  })
  .strict();

const patchBody = z.object({ title: title.nullable() }).strict();

export const photoContracts = {
  list: route({
    method: 'GET',
    url: '/api/v1/photos',
    summary: "The caller's photos, newest first (of one origin with ?origin)",
    querystring: listQuery,
    responses: { '200': page(photoView) },
    errors: { '400': 'invalid_request, invalid_cursor' },
  }),
  create: route({
    method: 'POST',
    url: '/api/v1/photos',
    summary:
      'Add a photo: the raw image as the body (png, jpeg, webp or gif; magic bytes checked; ?title), or JSON naming an attachment to copy',
    querystring: createQuery,
    rawBody: { contentTypes: imageTypes },
    body: fromAttachment,
    // The body is bytes or JSON: the handler reads it by its content type.
    handlerValidates: true,
    parameters: [idempotencyKeyParameter],
    responses: { '201': photoView },
    errors: {
      '400': 'invalid_request (empty, or a bad field), malformed_json',
      '404': 'attachment_not_found (also one of a session the caller may not see)',
      '409': 'idempotency_conflict (the Idempotency-Key was used for another image)',
      '413': 'payload_too_large (limits.attachment_bytes)',
      '415': 'unsupported_media_type (type not allowed, or bytes not of it)',
    },
  }),
  get: route({
    method: 'GET',
    url: '/api/v1/photos/:photoId',
    summary: 'One photo of the caller (its metadata)',
    responses: { '200': photoView },
    errors: { '404': "photo_not_found (also another user's photo)" },
  }),
  content: route({
    method: 'GET',
    url: '/api/v1/photos/:photoId/content',
    summary: "A photo's bytes, with its stored media type",
    responses: {
      '200': {
        description: 'The image bytes with their media type',
        content: Object.fromEntries(imageTypes.map((type) => [type, { schema: binary }])),
      },
    },
    errors: { '404': 'photo_not_found' },
  }),
  update: route({
    method: 'PATCH',
    url: '/api/v1/photos/:photoId',
    summary: 'Rename a photo (null clears its title)',
    body: patchBody,
    responses: { '200': photoView },
    errors: { '400': 'invalid_request', '404': 'photo_not_found' },
  }),
  delete: route({
    method: 'DELETE',
    url: '/api/v1/photos/:photoId',
    summary: 'Delete a photo from the library',
    responses: { '204': { description: 'deleted' } },
    errors: { '404': 'photo_not_found' },
  }),
};

function cursorOf(value: string | undefined): PhotoCursor | null {
  if (value === undefined) return null;
  const { at, id } = timeCursor(value);
  return { createdAt: at, photoId: id };
}

/** What the body of `POST /photos` is declared as: JSON, or one of the image types. */
function declaredType(request: FastifyRequest): 'application/json' | (typeof imageTypes)[number] {
  const mediaType = declaredMediaType(request);
  if (mediaType === 'application/json' || isImageType(mediaType)) return mediaType;
  throw new ParleyError(
    'unsupported_media_type',
    `send the image as one of ${imageTypes.join(', ')}, or JSON naming an attachment`,
  );
}

const notFound = () => new ParleyError('photo_not_found', 'no such photo');

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

/**
 * The photo library (PROTOCOL.md, "Photos"): a user's own images, uploaded here, copied
 * from a conversation's attachment, landed by a chat upload (attachments.ts) or made by
 * image generation. Personal: every route reads the caller's own photos only, so another
 * user's (an admin's included) or another tenant's photo answers 404 like a missing one.
 * `POST /photos` takes either a raw image or JSON, so it has its own scope with a parser
 * for each (the image one bounded by `limits.attachment_bytes`, JSON by the server's
 * body limit); the declared type is checked before a byte of the body is read.
 */
export function photoRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const limit = deps.config.limits.attachmentBytes;
  const api = typed(app);
  const { list, create, get, content, update } = photoContracts;

  api.get(list.url, routeOptions(list), async (request) => {
    const { principal } = request;
    const query = request.query;
    return listPhotos(
      deps.db,
      { tenant: principal.tenant, owner: principal.user, origin: query.origin ?? null },
      { limit: query.limit, cursor: cursorOf(query.cursor) },
    );
  });

  void app.register(async (scope) => {
    rawOrJsonBodies(scope, limit, deps.config.server.bodyLimitBytes);
    typed(scope).post(
      create.url,
      {
        ...routeOptions(create),
        preParsing: async (request: FastifyRequest) => {
          declaredType(request);
          idempotencyKeyOf(request.headers['idempotency-key']);
        },
      },
      async (request, reply) => {
        const { principal } = request;
        const query = validate(createQuery, request.query);
        const mediaType = declaredType(request);
        const key = idempotencyKeyOf(request.headers['idempotency-key']);
        const photoId =
          key === null ? newPhotoId() : keyedId('ph', [principal.tenant, principal.user, key]);
        // A retry with the key answers the photo stored by the first, if it has these bytes.
        const add = async (photo: Omit<NewPhoto, 'photoId' | 'tenant' | 'owner'>) => {
          if (key !== null) {
            const stored = await readPhotoContent(
              deps.db,
              principal.tenant,
              principal.user,
              photoId,
            );
            if (stored) {
              if (stored.mediaType !== photo.mediaType || !sameBytes(stored.bytes, photo.bytes)) {
                throw new ParleyError(
                  'idempotency_conflict',
                  'Idempotency-Key: already used for another image',
                );
              }
              const replayed = await readPhoto(deps.db, principal.tenant, principal.user, photoId);
              if (!replayed) throw notFound();
              return reply.status(201).send(replayed);
            }
          }
          const made = await insertPhoto(deps.db, {
            ...photo,
            photoId,
            tenant: principal.tenant,
            owner: principal.user,
          });
          return reply.status(201).send(made);
        };
        if (mediaType === 'application/json') {
          const body = validate(fromAttachment, request.body);
          const attachmentId = pathId(body.attachment_id, 'attachment_id');
          const found = await readAttachmentById(deps.db, principal.tenant, attachmentId);
          const visible =
            found &&
            (await findVisibleSession(
              deps.db,
              principal.tenant,
              found.session_id,
              viewerOf(deps, principal),
            ));
          if (!found || !visible) {
            throw new ParleyError('attachment_not_found', 'attachment_id: no such attachment');
          }
          if (found.data.byteLength > limit) {
            throw new ParleyError('payload_too_large', 'the image is over limits.attachment_bytes');
          }
          return add({
            origin: 'upload',
            title: body.title ?? query.title ?? null,
            source: { session_id: found.session_id, attachment_id: found.attachment_id },
            mediaType: found.media_type,
            bytes: found.data,
          });
        }
        const data = request.body as Buffer | undefined;
        if (!data || data.byteLength === 0) {
          throw new ParleyError('invalid_request', 'the image is empty');
        }
        if (!bytesMatch(mediaType, data)) {
          throw new ParleyError('unsupported_media_type', `the bytes are not a ${mediaType} image`);
        }
        return add({
          origin: 'upload',
          title: query.title ?? null,
          source: {},
          mediaType,
          bytes: data,
        });
      },
    );
  });

  api.get(get.url, routeOptions(get), async (request) => {
    const { principal } = request;
    const photoId = pathId(request.params.photoId, 'photo_id');
    const found = await readPhoto(deps.db, principal.tenant, principal.user, photoId);
    if (!found) throw notFound();
    return found;
  });

  api.get(content.url, routeOptions(content), async (request, reply) => {
    const { principal } = request;
    const photoId = pathId(request.params.photoId, 'photo_id');
    const found = await readPhotoContent(deps.db, principal.tenant, principal.user, photoId);
    if (!found) throw notFound();
    return sendPhoto(reply, found);
  });

  api.patch(update.url, routeOptions(update), async (request) => {
    const { principal } = request;
    const photoId = pathId(request.params.photoId, 'photo_id');
    const updated = await updatePhotoTitle(
      deps.db,
      principal.tenant,
      principal.user,
      photoId,
      request.body.title,
    );
    if (!updated) throw notFound();
    return updated;
  });

  api.delete(
    photoContracts.delete.url,
    routeOptions(photoContracts.delete),
    async (request, reply) => {
      const { principal } = request;
      const photoId = pathId(request.params.photoId, 'photo_id');
      if (!(await deletePhoto(deps.db, principal.tenant, principal.user, photoId))) {
        throw notFound();
      }
      return reply.status(204).send();
    },
  );
}

/** A photo's bytes as a response: its type, kept privately, never sniffed as another. */
export function sendPhoto(reply: FastifyReply, photo: { mediaType: string; bytes: Uint8Array }) {
  return reply
    .header('content-type', photo.mediaType)
    .header('cache-control', 'private, max-age=3600')
    .header('x-content-type-options', 'nosniff')
    .send(Buffer.from(photo.bytes));
}
