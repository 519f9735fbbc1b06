import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ParleyError, type ErrorCode } from '../../errors.js';
import { installErrorHandler } from '../errors.js';
import { isV03Method, isV03Version } from './v03.js';

/**
 * A2A's JSON-RPC 2.0 binding (docs/protocols.md, "A2A"): the envelope, and Parley's errors
 * in its error shape. Every refusal keeps Parley's HTTP status (so a proxy or a test sees
 * it) and carries A2A's code in the body, with Parley's code as the `ErrorInfo` reason.
 */

/** A JSON-RPC request id: a string or a number (a notification's absent id is refused). */
export type RpcId = string | number | null;

export const rpcEnvelope = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.string().min(1).max(200),
  params: z.record(z.string(), z.unknown()).optional(),
  id: z.union([z.string().max(200), z.number().int()]),
});

/** The `field` of a refusal of the envelope (jsonrpc, method, id) rather than its params. */
export const envelopeField = '(envelope)';

/** A2A's JSON-RPC error codes (the SDK's `A2A_ERROR_CODE`), by Parley's code. */
const rpcCodes: Partial<Record<ErrorCode, number>> = {
  malformed_json: -32700,
  method_not_found: -32601,
  invalid_request: -32602,
  invalid_cursor: -32602,
  empty_message: -32602,
  message_too_long: -32602,
  payload_too_large: -32602,
  internal_error: -32603,
  storage_unavailable: -32603,
  turn_not_found: -32001,
  session_not_found: -32001,
  input_not_found: -32001,
  task_not_cancelable: -32002,
  push_notification_not_supported: -32003,
  unsupported_operation: -32004,
  unsupported_media_type: -32005,
  version_not_supported: -32009,
};

/** The JSON-RPC code of a Parley error: its own, else Invalid Request (4xx) or Internal. */
export function rpcCodeOf(error: ParleyError): number {
  // The envelope itself is wrong (not its params): JSON-RPC's Invalid Request.
  if (error.code === 'invalid_request' && error.details.field === envelopeField) return -32600;
  return rpcCodes[error.code] ?? (error.status >= 500 ? -32603 : -32600);
}

/** A Parley error as a JSON-RPC error response. */
export function rpcErrorBody(error: ParleyError, id: RpcId = null): Record<string, unknown> {
  const field = error.details.field;
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: rpcCodeOf(error),
      message: error.message,
      data: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: error.code,
          domain: 'parley',
          ...(typeof field === 'string' ? { metadata: { field } } : {}),
        },
      ],
    },
  };
}

/** Errors in this scope (auth, a body that is not JSON) answer in JSON-RPC's shape. */
export function installRpcErrors(scope: FastifyInstance): void {
  installErrorHandler(scope, (error) => rpcErrorBody(error));
}

/** Parses a method's params with its schema: a failure is A2A's Invalid params. */
export function paramsOf<T extends z.ZodType>(schema: T, params: unknown): z.output<T> {
  const parsed = schema.safeParse(params ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = `params.${issue?.path.map(String).join('.') ?? ''}`.replace(/\.$/, '');
  throw new ParleyError('invalid_request', `${field}: ${issue?.message ?? 'invalid'}`, { field });
}

/** The request's id, if it has a usable one (for the error response). */
export function rpcIdOf(body: unknown): RpcId {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/**
 * `A2A-Version`: absent (the SDK's own 1.0 requests never lack it; a 0.3 client's may), or
 * the version of the method called — 1.x for 1.0's names, 0.3's range for 0.3's (v03.ts).
 */
export function checkVersion(header: string | string[] | undefined, method: string): void {
  const version = (Array.isArray(header) ? header[0] : header)?.trim();
  if (version === undefined || version === '') return;
  const v03 = isV03Method(method);
  if (v03 ? isV03Version(version) : /^1(\.\d+)?$/.test(version)) return;
  throw new ParleyError(
    'version_not_supported',
    `A2A-Version ${version.slice(0, 20)} is not the version of ${v03 ? '0.3' : '1.0'}'s ${method.slice(0, 60)}: this server speaks A2A 1.0 (SendMessage, GetTask…) and 0.3 (message/send, tasks/get…)`,
    { supported: ['1.0', '0.3'] },
  );
}
