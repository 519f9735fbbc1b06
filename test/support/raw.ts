import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The whole answer as received, for "nothing echoed" checks. */
  raw: string;
}

/**
 * Sends bytes exactly as given on a fresh TCP connection (no client library normalising
 * the URL or the headers) and reads until the server closes or `settleMs` passes after
 * the answer's body. For requests a well-behaved client would never send.
 */
export function rawRequest(
  url: string,
  bytes: string | Buffer,
  options: { keepOpenMs?: number } = {},
): Promise<RawResponse> {
  const { port, hostname } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      socket.destroy();
      resolve(parse(received.toString('utf8')));
    };
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      // An event stream never ends by itself: its head is the answer.
      if (end >= 0 && /content-type:\s*text\/event-stream/i.test(text.slice(0, end))) {
        finish();
        return;
      }
      const length = /content-length:\s*(\d+)/i.exec(text.slice(0, end));
      if (end >= 0 && length && Buffer.byteLength(text.slice(end + 4)) >= Number(length[1])) {
        setTimeout(finish, options.keepOpenMs ?? 0);
      }
    });
    socket.on('close', finish);
    socket.on('error', (error) => (received.length > 0 ? finish() : reject(error)));
  });
}

function parse(raw: string): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  const head = end >= 0 ? raw.slice(0, end) : raw;
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return {
    status: Number(statusLine.split(' ')[1] ?? 0),
    headers,
    body: end >= 0 ? raw.slice(end + 4) : '',
    raw,
  };
}

/** A GET (or other bodiless request) with the protocol header, over a raw socket. */
export function rawGet(url: string, path: string, method = 'GET'): Promise<RawResponse> {
  return rawRequest(
    url,
    `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nparley-protocol-version: 1\r\nconnection: close\r\n\r\n`,
  );
}

/** A JSON POST over a raw socket (the path is sent exactly as given). */
export function rawPost(
  url: string,
  path: string,
  body: string,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<RawResponse> {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return rawRequest(
    url,
    `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n${lines.join('')}` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
