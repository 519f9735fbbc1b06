/**
 * The one registry of Parley's error codes. Every error a client can see is listed here
 * with its HTTP status; code matches on `code`, never on message text. Messages are for
 * people and never contain secrets, stack traces or provider bodies.
 */
export const errorCodes = {
  unsupported_protocol_version: 400,
  invalid_request: 400,
  invalid_url: 400,
  malformed_json: 400,
  empty_message: 400,
  invalid_option: 400,
  invalid_cursor: 400,
  invalid_input: 400,
  invalid_definition: 400,
  invalid_panel: 400,
  invalid_form: 400,
  // A2A (docs/protocols.md): a JSON-RPC method this server does not have; an operation
  // of the protocol it does not offer; a protocol version it does not speak.
  method_not_found: 400,
  unsupported_operation: 400,
  push_notification_not_supported: 400,
  version_not_supported: 400,
  // OpenAI Files (docs/protocols.md): an upload that is not an image the library takes;
  // a `file_id` in a turn's input that names no file of the caller (OpenAI answers 400).
  unsupported_file: 400,
  unknown_file: 400,
  unauthorized: 401,
  invalid_signature: 401,
  forbidden: 403,
  operator_only_key: 403,
  not_found: 404,
  session_not_found: 404,
  unknown_agent: 404,
  turn_not_found: 404,
  option_not_found: 404,
  input_not_found: 404,
  attachment_not_found: 404,
  mission_not_found: 404,
  execution_not_found: 404,
  checkpoint_not_found: 404,
  personal_session_not_found: 404,
  budget_not_found: 404,
  panel_not_found: 404,
  photo_not_found: 404,
  // An OpenAI Files id that is no photo of the caller's library.
  file_not_found: 404,
  workspace_not_found: 404,
  schedule_not_found: 404,
  // Speech (docs/PROTOCOL.md, "Voices and speech"): a voice not in the catalog; a message
  // not in the session.
  voice_not_found: 404,
  message_not_found: 404,
  // A definition's revision this tenant never had; an agent or mission nothing shipped.
  revision_not_found: 404,
  not_shipped: 404,
  turn_conflict: 409,
  agent_mismatch: 409,
  agent_revision_mismatch: 409,
  cursor_ahead: 409,
  session_not_parked: 409,
  command_conflict: 409,
  option_locked: 409,
  session_closed: 409,
  stale_input: 409,
  task_not_cancelable: 409,
  execution_conflict: 409,
  execution_not_blocked: 409,
  session_busy: 409,
  not_customized: 409,
  workspace_name_taken: 409,
  // An upload's Idempotency-Key sent again with other bytes.
  idempotency_conflict: 409,
  request_timeout: 408,
  resync_required: 410,
  payload_too_large: 413,
  message_too_long: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  too_many_streams: 429,
  headers_too_large: 431,
  internal_error: 500,
  // A turn an adapter answers for ended without a reply (OpenAI Chat Completions).
  turn_failed: 502,
  // A streamed completion's sent text was withdrawn (a retried attempt): send it again.
  reply_withdrawn: 502,
  // Such a turn had not ended when the request stopped waiting (server.blocking_wait_ms);
  // it goes on.
  turn_pending: 504,
  platform_event_failed: 500,
  // The speech provider failed (its HTTP status, espeak-ng's exit, the deadline, the size).
  speech_failed: 502,
  // No `speech.transcription_model`: this server takes no speech input (a 404, not a 5xx:
  // nothing failed, the route has nothing behind it here).
  transcription_unavailable: 404,
  // A turn's `error` event code, never an HTTP answer: the progress watchdog ended a turn
  // whose steps kept making no progress (docs/governance.md, "Progress watchdog").
  stalled: 504,
  not_ready: 503,
  storage_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorCodes;

export class ParleyError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ParleyError';
    this.status = errorCodes[code];
  }

  toBody(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.details };
  }
}

export function isParleyError(error: unknown): error is ParleyError {
  return error instanceof ParleyError;
}
