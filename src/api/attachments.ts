import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ParleyError } from '../errors.js';
import { keyedId, newAttachmentId, newPhotoId } from '../ids.js';
import { createAttachment } from '../store/createAttachment.js';
import { insertPhoto, readPhotoContent } from '../store/photos.js';
import { readAttachments } from '../store/readAttachments.js';
import { z } from 'zod';
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
import { idempotencyKeyOf, pathId, text, validate } from './validate.js';

const binary = { type: 'string', format: 'binary' };

const fromPhoto = z
  .object({
    photo_id: text().min(1).max(128).meta({
      description: "one of the caller's photos: attached to the session, not added again",
    }),
  })
  .strict();

export const attachmentContracts = {
  upload: route({
    method: 'POST',
    url: '/api/v1/chat/sessions/:sessionId/attachments',
    summary:
      "Upload an image (raw body; png, jpeg, webp or gif; magic bytes checked), or JSON naming one of the caller's photos",
    rawBody: { contentTypes: imageTypes },
    body: fromPhoto,
    handlerValidates: true,
    parameters: [idempotencyKeyParameter],
    responses: {
      '201': z.object({
        attachment_id: z.string(),
        media_type: z.string(),
        bytes: z.number().int(),
      }),
    },
    errors: {
      '400': 'invalid_request (empty, or a bad field), malformed_json',
      '404': "session_not_found, photo_not_found (also another user's photo)",
      '409': 'idempotency_conflict (the Idempotency-Key was used for another image)',
      '413': 'payload_too_large (limits.attachment_bytes)',
      '415': 'unsupported_media_type (type not allowed, or bytes not of it)',
    },
  }),
  download: route({
    method: 'GET',
    url: '/api/v1/chat/sessions/:sessionId/attachments/:attachmentId',
    summary: 'The stored image, to its tenant only',
    responses: {
      '200': {
        description: 'The image bytes with their media type',
        content: Object.fromEntries(imageTypes.map((type) => [type, { schema: binary }])),
      },
    },
    errors: { '404': 'not_found' },
  }),
};

/**
 * Attachments (vision): `POST /api/v1/chat/sessions/{id}/attachments` takes the raw image
 * as the body with its content type; `GET .../attachments/{attachment_id}` serves it back
 * to whoever may see the session. Everything that can be refused without the body (the
 * session, by the session check every `:sessionId` route has; the declared type; a
 * Content-Length over `limits.attachment_bytes`) is refused before a byte of it is read.
 * A stored upload also lands in the uploader's photo library (photos.ts); JSON
 * `{"photo_id"}` instead attaches one of the caller's photos, which is in the library
 * already. Registered as its own plugin so that its body parsers do not apply elsewhere.
 */
export function attachmentRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const limit = deps.config.limits.attachmentBytes;
  void app.register(async (scope) => {
    rawOrJsonBodies(scope, limit, deps.config.server.bodyLimitBytes);
    const api = typed(scope);
    const { upload, download } = attachmentContracts;
    api.post(
      upload.url,
      {
        ...routeOptions(upload),
        bodyLimit: limit,
        // Before the body is read: a wrong type costs no upload (nor, by the session
        // check, does a session the principal may not see).
        preParsing: async (request: FastifyRequest) => {
          declaredType(request);
          idempotencyKeyOf(request.headers['idempotency-key']);
        },
      },
      async (request, reply) => {
        const { tenant, user } = request.principal;
        const sessionId = request.session.session_id;
        const mediaType = declaredType(request);
        // With an Idempotency-Key the ids are the key's: a retry stores nothing twice.
        const key = idempotencyKeyOf(request.headers['idempotency-key']);
        const attachmentId =
          key === null ? newAttachmentId() : keyedId('att', [tenant, user, sessionId, key]);
        const photoId = key === null ? newPhotoId() : keyedId('ph', [tenant, attachmentId]);
        const replayCheck = (attached: { conflicting: boolean }) => {
          if (attached.conflicting) {
            throw new ParleyError(
              'idempotency_conflict',
              'Idempotency-Key: already used for another image in this session',
            );
          }
        };
        if (mediaType === 'application/json') {
          const body = validate(fromPhoto, request.body);
          const photoId = pathId(body.photo_id, 'photo_id');
          const photo = await readPhotoContent(deps.db, tenant, user, photoId);
          if (!photo) throw new ParleyError('photo_not_found', 'photo_id: no such photo');
          if (photo.bytes.byteLength > limit) {
            throw new ParleyError('payload_too_large', 'the image is over limits.attachment_bytes');
          }
          const attached = await createAttachment(deps.db, {
            attachmentId,
            tenant,
            sessionId,
            mediaType: photo.mediaType,
            data: photo.bytes,
            uploadedBy: user,
          });
          if (!attached) throw new ParleyError('session_not_found', 'no such session');
          replayCheck(attached);
          return reply.status(201).send(attachmentView(attached));
        }
        const data = request.body as Buffer | undefined;
        if (!data || data.byteLength === 0) {
          throw new ParleyError('invalid_request', 'the attachment is empty');
        }
        if (!bytesMatch(mediaType, data)) {
          throw new ParleyError('unsupported_media_type', `the bytes are not a ${mediaType} image`);
        }
        // The uploader's photo library gets the image too (PROTOCOL.md, "Photos"), in the
        // same transaction: both rows, or neither.
        const stored = await deps.db.transaction(async (tx) => {
          const attachment = await createAttachment(tx, {
            attachmentId,
            tenant,
            sessionId,
            mediaType,
            data,
            uploadedBy: user,
          });
          if (!attachment) throw new ParleyError('session_not_found', 'no such session');
          replayCheck(attachment);
          // A replay's photo is there already (same transaction): this stores nothing.
          await insertPhoto(tx, {
            photoId,
            tenant,
            owner: user,
            origin: 'upload',
            title: null,
            source: { session_id: attachment.session_id, attachment_id: attachment.attachment_id },
            mediaType,
            bytes: data,
          });
          return attachment;
        });
        return reply.status(201).send(attachmentView(stored));
      },
    );

    api.get(
      download.url,
      // A session the principal may not see: as missing as the attachment.
      routeOptions(download, {
        missingSession: { code: 'not_found', message: 'no such attachment' },
      }),
      async (request, reply) => {
        const [found] = await readAttachments(
          deps.db,
          request.principal.tenant,
          request.session.session_id,
          [pathId(request.params.attachmentId, 'attachment_id')],
        );
        if (!found) throw new ParleyError('not_found', 'no such attachment');
        return reply
          .header('content-type', found.media_type)
          .header('cache-control', 'private, max-age=3600')
          .header('x-content-type-options', 'nosniff')
          .header('etag', `"${found.sha256}"`)
          .send(Buffer.from(found.data));
      },
    );
  });
}

/** What an upload's body is declared as: JSON naming a photo, or one of the image types. */
function declaredType(request: FastifyRequest): 'application/json' | (typeof imageTypes)[number] {
  const mediaType = declaredMediaType(request);
  if (mediaType === 'application/json' || isImageType(mediaType)) return mediaType;
  throw new ParleyError(
    'unsupported_media_type',
    `send the image as one of ${imageTypes.join(', ')}, or JSON naming a photo`,
  );
}

function attachmentView(stored: { attachment_id: string; media_type: string; bytes: number }) {
  return {
    attachment_id: stored.attachment_id,
    media_type: stored.media_type,
    bytes: stored.bytes,
  };
}
