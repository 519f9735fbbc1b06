import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ParleyError } from '../../errors.js';

/**
 * The params of the A2A methods Parley serves, as the protocol's JSON (proto3 JSON of
 * `lf.a2a.v1`) writes them: checked here, before anything is read or written.
 */

const metadata = z.record(z.string(), z.unknown()).optional();

const part = z
  .object({
    text: z.string().optional(),
    data: z.unknown().optional(),
    url: z.string().optional(),
    raw: z.string().optional(),
    mediaType: z.string().max(200).optional(),
    filename: z.string().max(500).optional(),
    metadata,
  })
  .loose()
  .refine(
    (value) =>
      [value.text, value.data, value.url, value.raw].filter((x) => x !== undefined).length === 1,
    'a part is one of text, data, url or raw',
  );

export const messageParams = z
  .object({
    messageId: z.string().min(1).max(200),
    contextId: z.string().max(128).optional(),
    taskId: z.string().max(200).optional(),
    role: z.enum(['ROLE_USER', 'ROLE_UNSPECIFIED']).optional(),
    parts: z.array(part).min(1).max(100),
    metadata,
    extensions: z.array(z.string().max(500)).max(20).optional(),
    referenceTaskIds: z.array(z.string().max(200)).max(20).optional(),
  })
  .loose();

export const sendParams = z
  .object({
    tenant: z.string().max(128).optional(),
    message: messageParams,
    configuration: z
      .object({
        acceptedOutputModes: z.array(z.string().max(200)).max(20).optional(),
        historyLength: z.number().int().min(0).max(10_000).optional(),
        returnImmediately: z.boolean().optional(),
        taskPushNotificationConfig: z.unknown().optional(),
      })
      .loose()
      .optional(),
    metadata,
  })
  .loose();

export const taskParams = z
  .object({
    tenant: z.string().max(128).optional(),
    id: z.string().min(1).max(200),
    historyLength: z.number().int().min(0).max(10_000).optional(),
    metadata,
  })
  .loose();

/** Task states a `ListTasks` may filter by (A2A's JSON names). */
export const listableStates = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
] as const;

export const listParams = z
  .object({
    tenant: z.string().max(128).optional(),
    contextId: z.string().min(1).max(200).optional(),
    status: z.enum(listableStates).optional(),
    pageSize: z.number().int().min(1).max(100).optional(),
    pageToken: z.string().max(500).optional(),
    historyLength: z.number().int().min(0).max(10_000).optional(),
    statusTimestampAfter: z.iso.datetime({ offset: true }).optional(),
    includeArtifacts: z.boolean().optional(),
    metadata,
  })
  .loose();

export type SendParams = z.output<typeof sendParams>;
export type MessageParams = z.output<typeof messageParams>;

/** A message's text: its text parts, joined by blank lines. Files are not taken. */
export function textOf(message: MessageParams): string {
  if (message.parts.some((item) => item.url !== undefined || item.raw !== undefined)) {
    throw new ParleyError('unsupported_media_type', 'only text and data parts are taken', {
      field: 'params.message.parts',
    });
  }
  return message.parts
    .filter((item) => item.text !== undefined)
    .map((item) => item.text)
    .join('\n\n');
}

/** The message's data parts that are JSON objects (an answer's `approved`, `request_id`…). */
export function dataOf(message: MessageParams): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const item of message.parts) {
    if (typeof item.data === 'object' && item.data !== null && !Array.isArray(item.data)) {
      Object.assign(merged, item.data);
    }
  }
  return merged;
}

/**
 * The turn a message admits: derived from its `messageId` (and who sends it to which
 * agent), so a retry of the same message is the same turn, admitted once.
 */
export function turnIdOfMessage(user: string, agent: string, messageId: string): string {
  const digest = createHash('sha256').update(`${user}\n${agent}\n${messageId}`).digest('base64url');
  return `a2a_${digest.slice(0, 32)}`;
}

const yes = new Set(['approve', 'approved', 'yes', 'y', 'ok', 'allow']);
const no = new Set(['reject', 'rejected', 'no', 'n', 'deny', 'denied']);

/** An answer's decision: a data part's `approved`, else the text's yes or no (null: neither). */
export function decisionOf(text: string, data: Record<string, unknown>): boolean | null {
  if (typeof data.approved === 'boolean') return data.approved;
  const word = text.trim().toLowerCase().replace(/[.!]$/, '');
  if (yes.has(word)) return true;
  if (no.has(word)) return false;
  return null;
}
