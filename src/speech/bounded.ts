/** Reading a body without letting it grow past a limit. */

export class TooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`more than ${limit} bytes`);
    this.name = 'TooLargeError';
  }
}

/** Concatenates chunks, failing as soon as more than `limit` bytes arrived. */
export class BoundedBuffer {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;
  constructor(private readonly limit: number) {}

  push(chunk: Uint8Array): void {
    this.size += chunk.byteLength;
    if (this.size > this.limit) throw new TooLargeError(this.limit);
    this.chunks.push(chunk);
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, at);
      at += chunk.byteLength;
    }
    return out;
  }
}

/** A response's body, at most `limit` bytes (the rest is not read: TooLargeError). */
export async function readBounded(response: Response, limit: number): Promise<Uint8Array> {
  const buffer = new BoundedBuffer(limit);
  if (!response.body) return buffer.bytes();
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer.push(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
  return buffer.bytes();
}

/**
 * A fetch whose responses' bodies stop at `limit` bytes: past it, reading the body fails
 * with TooLargeError (for a client library that reads the body itself).
 */
export function boundedFetch(fetchImpl: typeof fetch, limit: number): typeof fetch {
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    if (!response.body) return response;
    let size = 0;
    const limited = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          size += chunk.byteLength;
          if (size > limit) controller.error(new TooLargeError(limit));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(limited, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
