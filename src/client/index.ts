/**
 * `parley/client`: the TypeScript SDK for the Parley chat protocol (PROTOCOL.md). It
 * imports nothing from the server and runs in browsers as well as Node.
 */
export { ParleyClient } from './client.js';
export type {
  AdmitTurnOptions,
  AnswerInputOptions,
  ClientToolDeclaration,
  ParleyClientOptions,
} from './client.js';
export { ParleyClientError, clientErrorCodes, isParleyClientError } from './errors.js';
export { HttpTransport, protocolVersion } from './http.js';
export type { HttpOptions, Media, RawBody, RequestOptions } from './http.js';
export { Subscription } from './subscription.js';
export type {
  ConnectionState,
  StateChange,
  StopReason,
  SubscribeOptions,
  SubscriptionIo,
} from './subscription.js';
export { UserStream } from './userStream.js';
export type { UserStreamFrame, UserStreamOptions, UserStreamState } from './userStream.js';
export { SseParser, readSse } from './sse.js';
export type { SseComment, SseFrame, SseMessage } from './sse.js';
export { backoffDelay, defaultBackoff } from './backoff.js';
export type { BackoffOptions } from './backoff.js';
export { newClientKey } from './ids.js';
export { isTerminalEvent } from './events.js';
export type * from './events.js';
export type * from './types.js';
