/**
 * `parley/ai-sdk`: Parley as the backend of AI SDK UI (`useChat`), through a
 * `ChatTransport`. Imports only `parley/client` and `ai`'s types: it runs in browsers.
 */
export { ParleyChatTransport, toTurnId } from './transport.js';
export type { ParleyChatTransportOptions } from './transport.js';
export { ChunkMapper, withoutAbandonedText } from './chunks.js';
export { decodeApprovalId, encodeApprovalId } from './approvals.js';
export type { ApprovalRef } from './approvals.js';
export { isAbandonedPart, replyMessageId, toUIMessages } from './messages.js';
