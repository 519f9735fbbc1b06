/** The OpenAPI paths of image attachments (raw bodies, written by hand). */
const error = { $ref: '#/components/schemas/Error' };
const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: error } },
});
const json = (schema: object, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});
const path = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });

export const providerPaths = {
  '/api/v1/chat/sessions/{session_id}/attachments': {
    post: {
      summary: 'Upload an image (raw body; png, jpeg, webp or gif; magic bytes checked)',
      parameters: [path('session_id')],
      requestBody: {
        required: true,
        content: Object.fromEntries(
          ['image/png', 'image/jpeg', 'image/webp', 'image/gif'].map((type) => [
            type,
            { schema: { type: 'string', format: 'binary' } },
          ]),
        ),
      },
      responses: {
        '201': json(
          {
            type: 'object',
            properties: {
              attachment_id: { type: 'string' },
              media_type: { type: 'string' },
              bytes: { type: 'integer' },
            },
          },
          'Stored',
        ),
        '400': errorResponse('invalid_request (empty)'),
        '404': errorResponse('session_not_found'),
        '413': errorResponse('payload_too_large (limits.attachment_bytes)'),
        '415': errorResponse('unsupported_media_type (type not allowed, or bytes not of it)'),
      },
    },
  },
  '/api/v1/chat/sessions/{session_id}/attachments/{attachment_id}': {
    get: {
      summary: 'The stored image, to its tenant only',
      parameters: [path('session_id'), path('attachment_id')],
      responses: {
        '200': { description: 'The image bytes with their media type' },
        '404': errorResponse('not_found'),
      },
    },
  },
} as const;
