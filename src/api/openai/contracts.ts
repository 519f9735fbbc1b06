import { z } from 'zod';
import { route } from '../contract.js';
import { storableJson, text } from '../validate.js';
import { clientToolLimits } from '../../tools/clientTools.js';
import { chatMessage } from './chatCompletion.js';

/** The base URL an OpenAI client is pointed at (`baseURL: "<parley>/openai/v1"`). */
export const openaiBase = '/openai/v1';

const textPart = z
  .object({ type: z.enum(['input_text', 'text']), text: text() })
  .loose()
  .meta({ description: 'text content' });

/** A file of the caller's (`POST /files`): a photo of their library. */
const fileId = text().min(1).max(128).meta({
  description: "a file of the caller's (POST /files): an image of their photo library",
});

export const imagePart = z
  .object({
    type: z.literal('input_image'),
    image_url: text().max(50_000_000).nullable().optional().meta({
      description:
        'a data: URL (png, jpeg, webp or gif, base64), or an http(s) URL on limits.remote_images.allow_hosts',
    }),
    file_id: fileId.nullable().optional(),
    detail: z.enum(['low', 'high', 'auto']).nullable().optional(),
  })
  .loose()
  .refine((part) => ((part.image_url ?? null) === null) !== ((part.file_id ?? null) === null), {
    message: 'one of image_url or file_id',
    path: ['image_url'],
  })
  .meta({ description: "an image, stored as an attachment of the turn's session" });

const filePart = z
  .object({ type: z.literal('input_file'), file_id: fileId })
  .loose()
  .meta({ description: 'a file by its id: an image (the only files this server keeps)' });

const inputItem = z
  .object({
    type: z.literal('message').optional(),
    role: z.literal('user').meta({
      description:
        'user messages only: the history lives in the session (previous_response_id, conversation)',
    }),
    content: z.union([text(), z.array(z.union([textPart, imagePart, filePart])).min(1)]),
  })
  .loose();

export const approvalResponse = z
  .object({
    type: z.literal('mcp_approval_response'),
    approval_request_id: text().min(1).max(128),
    approve: z.boolean(),
    reason: text().max(2000).nullable().optional(),
  })
  .loose()
  .meta({
    description:
      "a person's answer to an `mcp_approval_request` of the previous response (its turn resumes)",
  });

export const functionCallOutput = z
  .object({
    type: z.literal('function_call_output'),
    call_id: text().min(1).max(200),
    output: z.union([
      text(),
      z.array(z.object({ type: text(), text: text().optional() }).loose()).max(100),
    ]),
  })
  .loose()
  .meta({
    description:
      'the output of a `function_call` of the previous response: the client ran one of its own tools (its turn resumes)',
  });

const functionTool = z
  .object({
    type: z.literal('function'),
    name: text().min(1).max(64),
    description: text().max(4000).nullable().optional(),
    parameters: z.record(z.string(), z.unknown()).refine(storableJson).nullable().optional(),
  })
  .loose();

export const responseBody = z
  .object({
    model: text().min(1).max(200).meta({
      description: 'an agent of the principal: its name, or `parley/NAME`',
    }),
    input: z.union([
      text(),
      z.array(z.union([approvalResponse, functionCallOutput, inputItem])).min(1),
    ]),
    tools: z.array(functionTool).max(clientToolLimits.count).nullable().optional().meta({
      description:
        "the client's own function tools: the model may call them; the response then shows a `function_call` item and waits, and the next request brings a `function_call_output` with `previous_response_id`",
    }),
    stream: z.boolean().nullable().optional(),
    background: z.boolean().nullable().optional(),
    previous_response_id: text().min(1).max(200).nullable().optional(),
    conversation: z
      .union([text().min(1).max(128), z.object({ id: text().min(1).max(128) }).loose()])
      .nullable()
      .optional()
      .meta({ description: 'a Parley session id' }),
    instructions: text().nullable().optional().meta({
      description:
        "this turn's instructions, appended to the agent's own (not carried to the next response)",
    }),
    metadata: z
      .record(text().max(64), text().max(512))
      .refine((pairs) => Object.keys(pairs).length <= 16, 'at most 16 pairs')
      .nullable()
      .optional()
      .meta({ description: 'up to 16 string pairs, kept with the response' }),
  })
  .loose();

const responseView = z.record(z.string(), z.unknown()).meta({ id: 'OpenaiResponse' });
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    "the turn's id (1-128 of A-Z a-z 0-9 _ -): a retry with the same key is the same response",
  schema: { type: 'string' },
};

const errors = {
  '400': 'invalid_request, empty_message, message_too_long (OpenAI error shape)',
  '401': 'unauthorized',
  '404': 'unknown_agent, session_not_found or turn_not_found',
  '409': 'turn_conflict, session_closed',
};

export const openaiContracts = {
  models: route({
    method: 'GET',
    url: `${openaiBase}/models`,
    summary: "OpenAI-compatible: the principal's agents as models",
    responses: {
      '200': z.object({
        object: z.literal('list'),
        data: z.array(
          z.object({
            id: z.string(),
            object: z.literal('model'),
            created: z.number(),
            owned_by: z.string(),
          }),
        ),
      }),
    },
    errors: { '401': 'unauthorized' },
  }),
  create: route({
    method: 'POST',
    url: `${openaiBase}/responses`,
    summary: 'OpenAI-compatible Responses: admit a turn and answer (or stream) it',
    description:
      'A turn of the agent named by `model`; `stream: true` answers with Responses stream events (SSE), `background: true` at once; otherwise when the turn ends or waits for an approval.',
    body: responseBody,
    parameters: [idempotencyKey],
    responses: {
      '200': responseView,
      '201': { description: 'the response events, as text/event-stream (stream: true)' },
    },
    errors,
  }),
  get: route({
    method: 'GET',
    url: `${openaiBase}/responses/:responseId`,
    summary: 'OpenAI-compatible: a response as it stands, or its events again (stream=true)',
    querystring: z
      .object({
        stream: z.enum(['true', 'false']).optional(),
        starting_after: z.coerce.number().int().min(-1).max(1e9).optional(),
      })
      .loose(),
    responses: {
      '200': responseView,
      '201': { description: 'the events after starting_after, as text/event-stream' },
    },
    errors: { '401': 'unauthorized', '404': 'turn_not_found' },
  }),
  chat: route({
    method: 'POST',
    url: `${openaiBase}/chat/completions`,
    summary: 'OpenAI-compatible Chat Completions: a one-turn session (the history comes in)',
    description:
      "The messages are folded into the one message the turn admits (earlier ones quoted); answered when the turn ends or calls one of the client's function tools, or streamed as completion chunks ending with `data: [DONE]`. Messages ending with `tool` messages answer the calls their `tool_call_id`s name: that turn goes on.",
    body: z
      .object({
        model: text().min(1).max(200),
        messages: z.array(chatMessage).min(1).max(1000),
        stream: z.boolean().nullable().optional(),
        tools: z
          .array(
            z
              .object({
                type: z.literal('function'),
                function: functionTool.omit({ type: true }),
              })
              .loose(),
          )
          .max(clientToolLimits.count)
          .nullable()
          .optional()
          .meta({
            description:
              "the client's own function tools: a completion that calls them ends with `tool_calls` (finish_reason `tool_calls`) and the turn waits; the next request's trailing `tool` messages (by `tool_call_id`) answer them and that turn goes on",
          }),
      })
      .loose(),
    parameters: [idempotencyKey],
    responses: {
      '200': z.record(z.string(), z.unknown()).meta({ id: 'OpenaiChatCompletion' }),
      '201': { description: 'completion chunks, as text/event-stream (stream: true)' },
    },
    errors: { ...errors, '502': 'turn_failed (the turn ended without a reply)' },
  }),
  remove: route({
    method: 'DELETE',
    url: `${openaiBase}/responses/:responseId`,
    summary: 'OpenAI-compatible: delete a response (a running turn is cancelled first)',
    description:
      'The response id answers 404 from then on; the turn stays in its conversation (the session), whose deletion deletes the text.',
    responses: {
      '200': z.object({ id: z.string(), object: z.literal('response'), deleted: z.literal(true) }),
    },
    errors: { '401': 'unauthorized', '404': 'turn_not_found (also a retried DELETE)' },
  }),
  cancel: route({
    method: 'POST',
    url: `${openaiBase}/responses/:responseId/cancel`,
    summary: "OpenAI-compatible: cancel a response's turn (durable, idempotent)",
    bodyOptional: true,
    responses: { '200': responseView },
    errors: { '401': 'unauthorized', '404': 'turn_not_found' },
  }),
};
