import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ParleyError } from '../errors.js';
import { newAttachmentId, newPhotoId } from '../ids.js';
import { createAttachment } from '../store/createAttachment.js';
import { insertPhoto } from '../store/photos.js';
import { readAttachments } from '../store/readAttachments.js';
import { z } from 'zod';
import { declaredMediaType, rawBodies, route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { bytesMatch, imageTypes, isImageType } from '../media/imageTypes.js';
import { pathId } from './validate.js';

const binary = { type: 'string', format: 'binary' };

export const attachmentContracts = {
  upload: route({
    method: 'POST',
    url: '/api/v1/chat/sessions/:sessionId/attachments',
    summary: 'Upload an image (raw body; png, jpeg, webp or gif; magic bytes checked)',
    rawBody: { contentTypes: imageTypes },
    responses: {
      '201': z.object({
        attachment_id: z.string(),
        media_type: z.string(),
        bytes: z.number().int(),
      }),
    },
    errors: {
      '400': 'invalid_request (empty)',
      '404': 'session_not_found',
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
 * A stored upload also lands in the uploader's photo library (photos.ts). Registered as
 * its own plugin so that its raw-body parser does not apply to the JSON routes.
 */
export function attachmentRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const limit = deps.config.limits.attachmentBytes;
  void app.register(async (scope) => {
    rawBodies(scope, limit);
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
        },
      },
      async (request, reply) => {
        const mediaType = declaredType(request);
        const data = request.body as Buffer | undefined;
        if (!data || data.byteLength === 0) {
          throw new ParleyError('invalid_request', 'the attachment is empty');
        }
        if (!bytesMatch(mediaType, data)) {
          throw new ParleyError('unsupported_media_type', `the bytes are not a ${mediaType} image`);
        }
        const { tenant, user } = request.principal;
        // The uploader's photo library gets the image too (PROTOCOL.md, "Photos"), in the
        // same transaction: both rows, or neither.
        const stored = await deps.db.transaction(async (tx) => {
          const attachment = await createAttachment(tx, {
            attachmentId: newAttachmentId(),
            tenant,
            sessionId: request.session.session_id,
            mediaType,
            data,
            uploadedBy: user,
          });
          if (!attachment) throw new ParleyError('session_not_found', 'no such session');
          await insertPhoto(tx, {
            photoId: newPhotoId(),
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
        return reply.status(201).send({
          attachment_id: stored.attachment_id,
          media_type: stored.media_type,
          bytes: stored.bytes,
        });
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

function declaredType(request: FastifyRequest) {
  const mediaType = declaredMediaType(request);
  if (!isImageType(mediaType)) {
    throw new ParleyError(
      'unsupported_media_type',
      `send the image as one of ${imageTypes.join(', ')}`,
    );
  }
  return mediaType;
}
