import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

type StreamId = Parameters<EventStore['storeEvent']>[0];

/**
 * What one MCP session sent on its SSE streams, so a client whose stream broke can
 * reconnect with `Last-Event-ID` and get what it missed (the SDK's resumability). It
 * lives as long as the MCP session, in the process that holds it — as the session does —
 * and keeps the newest `limit` events; a cursor older than that is unknown (`400`), and
 * the client calls again with the same idempotency key, which is the same turn.
 *
 * Event ids are `<stream>.<n>`: n counts the session's events, so ids sort in send order.
 */
export class McpEventLog implements EventStore {
  private readonly events: { id: string; stream: StreamId; message: JSONRPCMessage }[] = [];
  private count = 0;

  constructor(private readonly limit = 2000) {}

  storeEvent(stream: StreamId, message: JSONRPCMessage): Promise<string> {
    const id = `${stream}.${++this.count}`;
    this.events.push({ id, stream, message });
    if (this.events.length > this.limit) this.events.splice(0, this.events.length - this.limit);
    return Promise.resolve(id);
  }

  getStreamIdForEventId(id: string): Promise<StreamId | undefined> {
    return Promise.resolve(this.events.find((event) => event.id === id)?.stream);
  }

  async replayEventsAfter(
    id: string,
    { send }: { send: (id: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const at = this.events.findIndex((event) => event.id === id);
    if (at < 0) throw new Error('unknown event id');
    const stream = (this.events[at] as { stream: StreamId }).stream;
    for (const event of this.events.slice(at + 1)) {
      // The priming event of a stream is an empty message: nothing to send again.
      if (event.stream === stream && Object.keys(event.message).length > 0) {
        await send(event.id, event.message);
      }
    }
    return stream;
  }
}
