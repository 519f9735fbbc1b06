/**
 * The journal's event types as a client receives them (PROTOCOL.md §3). They are defined
 * once, in `src/protocol/events.ts`, where the server's event constructor checks every
 * event it writes against them.
 */
export { isTerminalEvent } from '../protocol/events.js';
export type * from '../protocol/events.js';
