import { AGUI_MEDIA_TYPE, EventEncoder } from '@ag-ui/encoder';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AdapterStreams } from '../adapterStreams.js';
import type { SseWriter } from '../sseWriter.js';
import type { AgUiFrame } from './fold.js';
import { whenClientGone } from '../clientGone.js';

/**
 * How AG-UI events go out (docs/protocols.md, "AG-UI"): as server-sent events, or — for a
 * run whose client asks for `application/vnd.ag-ui.event+proto` — as AG-UI's binary
 * transport: each event a protobuf message (`@ag-ui/encoder`) after its length, four
 * bytes big-endian. The binary stream has no ids and no keep-alive (its framing has room
 * for neither), so only a run's stream offers it; a thread's stream, which resumes by
 * Last-Event-ID, is SSE whatever the client accepts.
 */
export interface AgUiOutput {
  /** Protobuf frames instead of SSE. */
  binary: boolean;
  /** SSE: each write's last event carries its journal sequence as its id. */
  ids: boolean;
  /** Frames written before the first ones the body gives (a snapshot, a re-opened run). */
  preamble?: AgUiFrame[];
}

/** Writes frames the stream's body gives (after the preamble, on its first call). */
export type AgUiSend = (frames: AgUiFrame[]) => void;

/**
 * Whether the Accept header asks for the binary transport: it names the protobuf media
 * type with a quality at least as high as any range that takes SSE (`text/event-stream`,
 * `text/*`, `*\/*`). A client that names neither, or accepts anything, gets SSE.
 */
export function acceptsProtobuf(accept: string | string[] | undefined): boolean {
  const header = Array.isArray(accept) ? accept.join(',') : (accept ?? '');
  let proto = 0;
  let sse = 0;
  for (const range of header.split(',')) {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const q = qualityOf(params);
    if (type === AGUI_MEDIA_TYPE) proto = Math.max(proto, q);
    if (type === 'text/event-stream' || type === 'text/*' || type === '*/*') sse = Math.max(sse, q);
  }
  return proto > 0 && proto >= sse;
}

function qualityOf(params: string[]): number {
  for (const param of params) {
    const [name, value] = param.split('=').map((part) => part.trim());
    if (name === 'q') {
      const q = Number(value);
      return Number.isFinite(q) && q >= 0 && q <= 1 ? q : 0;
    }
  }
  return 1;
}

/**
 * Answers `request` with an AG-UI event stream in the output's transport: `body` sends
 * frames until it returns (or `signal` says the client left, was dropped, or the app is
 * closing). SSE goes through the adapter's streams; the binary transport alike, without
 * the `retry:` hint and keep-alive comments SSE has, and with the same bound on what a
 * client leaves unread.
 */
export async function serveAgUi(
  streams: AdapterStreams,
  bufferBytes: number,
  request: FastifyRequest,
  reply: FastifyReply,
  output: AgUiOutput,
  body: (send: AgUiSend, signal: AbortSignal) => Promise<void>,
): Promise<void> {
  let preamble = output.preamble ?? [];
  const withPreamble = (frames: AgUiFrame[]) => {
    if (preamble.length === 0) return frames;
    const all = [...preamble, ...frames];
    preamble = [];
    return all;
  };
  if (!output.binary) {
    await streams.serve(request, reply, (stream, signal) =>
      body((frames) => writeSse(stream, withPreamble(frames), output.ids), signal),
    );
    return;
  }
  const controller = new AbortController();
  const untrack = streams.track(controller);
  reply.hijack();
  const response = reply.raw;
  response.writeHead(200, {
    'content-type': AGUI_MEDIA_TYPE,
    'cache-control': 'no-store, no-transform',
    'x-content-type-options': 'nosniff',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  response.flushHeaders();
  const unwatch = whenClientGone(request, () => controller.abort());
  const send: AgUiSend = (frames) => {
    const all = withPreamble(frames);
    if (all.length === 0 || response.writableEnded || response.destroyed) return;
    response.write(encodeProtobuf(all));
    if (response.writableLength > bufferBytes) {
      // A client that leaves this much unread is dropped, as on SSE.
      response.destroy();
      controller.abort();
    }
  };
  try {
    await body(send, controller.signal);
  } finally {
    unwatch();
    untrack();
    if (!response.writableEnded) response.end();
  }
}

const encoder = new EventEncoder({ accept: AGUI_MEDIA_TYPE });

/** The frames as AG-UI's binary transport: each a length-prefixed protobuf message. */
function encodeProtobuf(frames: AgUiFrame[]): Buffer {
  return Buffer.concat(
    frames.map((frame) => encoder.encodeBinary({ ...frame.event, timestamp: Date.now() })),
  );
}

/** AG-UI frames as SSE; with `ids`, the last one carries its journal sequence as its id. */
function writeSse(stream: SseWriter, frames: AgUiFrame[], ids: boolean): void {
  if (frames.length === 0) return;
  const last = frames.length - 1;
  const text = frames
    .map(
      (frame, index) =>
        `${ids && index === last ? `id: ${frame.sequence}\n` : ''}data: ${JSON.stringify({
          ...frame.event,
          timestamp: Date.now(),
        })}\n\n`,
    )
    .join('');
  stream.write(text);
}
