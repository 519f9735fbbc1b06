import { backoffDelay, sleep, type BackoffOptions } from './backoff.js';
import { ParleyClientError } from './errors.js';

/**
 * The one place the SDK calls fetch: protocol header, bearer key, coded errors, time
 * limits, and retries of idempotent calls. It never logs and never puts a request body
 * into an error: bodies may carry secrets or approval responses.
 */
export interface HttpOptions {
  /** The deployment's base URL, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string | undefined;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch | undefined;
  /** Further tries of an idempotent call after a network error or a 5xx (default 3). */
  retries?: number | undefined;
  backoff?: BackoffOptions | undefined;
  /** Time limit of one attempt of a JSON call (default 30 s); streams have none. */
  timeoutMs?: number | undefined;
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | null | undefined>;
  /**
   * Safe to send again: GETs, and POSTs that carry an idempotency key (turn_id,
   * command_id). Default: true for GET only.
   */
  idempotent?: boolean;
  signal?: AbortSignal | undefined;
}

/** A raw body: an image's bytes (with the content type they are). */
export type RawBody = Blob | Uint8Array | ArrayBuffer;

/** Bytes the server answered (an image, audio), with their media type. */
export interface Media {
  bytes: Uint8Array;
  mediaType: string;
}

export const protocolVersion = '1';

/**
 * Every answer must be the server's: a browser may keep a 410 (heuristically cacheable)
 * and replay it to the next try whatever its Last-Event-ID, so a resync would never end.
 * Browsers' fetch takes `cache`; Node's types do not list it (its fetch has no cache).
 */
const noStore = { cache: 'no-store' } as Record<string, unknown> as RequestInit;

export class HttpTransport {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: HttpOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    // Called unbound, a browser's fetch throws "Illegal invocation".
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** A JSON call; retried (same body, same idempotency key) when `idempotent`. */
  request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return this.retried(options.idempotent ?? method === 'GET', options.signal, () =>
      this.once<T>(method, path, options),
    );
  }

  /** `call` once, or — `idempotent` — again after each retryable failure, with backoff. */
  private async retried<T>(
    idempotent: boolean,
    signal: AbortSignal | undefined,
    call: () => Promise<T>,
  ): Promise<T> {
    const retries = idempotent ? (this.options.retries ?? 3) : 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        const retry = error instanceof ParleyClientError && error.retryable && attempt < retries;
        if (!retry) throw error;
        if (!(await sleep(backoffDelay(attempt + 1, this.options.backoff), signal))) {
          throw aborted();
        }
      }
    }
  }

  /**
   * Opens a long-lived GET (the event stream): one attempt, no time limit, the caller
   * reconnects. Answers other than 2xx become a ParleyClientError.
   */
  async stream(
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<Response> {
    let response: Response;
    try {
      response = await this.fetchImpl(this.url(path), {
        method: 'GET',
        headers: this.headers(headers),
        ...noStore,
        signal,
      });
    } catch (error) {
      throw signal.aborted ? aborted() : networkError(error);
    }
    if (!response.ok) throw await errorFrom(response);
    return response;
  }

  /**
   * Sends raw bytes (an upload) and reads the JSON answer. Without an `idempotencyKey`, one
   * attempt: a retry after a lost answer would store it twice. With one (the
   * `Idempotency-Key` header), retried like `request`: the server stores it once.
   */
  upload<T>(
    path: string,
    body: RawBody,
    contentType: string,
    options: Pick<RequestOptions, 'query' | 'signal'> & { idempotencyKey?: string } = {},
  ): Promise<T> {
    const key = options.idempotencyKey;
    return this.retried(key !== undefined, options.signal, () =>
      this.attempt('POST', path, options, {
        headers: {
          'content-type': contentType,
          ...(key === undefined ? {} : { 'idempotency-key': key }),
        },
        body: body as NonNullable<RequestInit['body']>,
        read: (response) => this.json<T>('POST', path, response),
      }),
    );
  }

  /**
   * A call answered with bytes (an image, audio): JSON in (`body`), bytes out. Retried
   * like `request` when `idempotent`.
   */
  media(method: string, path: string, options: RequestOptions = {}): Promise<Media> {
    const hasBody = options.body !== undefined;
    const read = async (response: Response): Promise<Media> => ({
      bytes: new Uint8Array(await response.arrayBuffer()),
      mediaType: (response.headers.get('content-type') ?? 'application/octet-stream')
        .split(';')[0]!
        .trim(),
    });
    return this.retried(options.idempotent ?? method === 'GET', options.signal, () =>
      this.attempt(method, path, options, {
        headers: hasBody ? { 'content-type': 'application/json' } : {},
        body: hasBody ? JSON.stringify(options.body) : null,
        accept: '*/*',
        read,
      }),
    );
  }

  private once<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const hasBody = options.body !== undefined;
    return this.attempt(method, path, options, {
      headers: hasBody ? { 'content-type': 'application/json' } : {},
      body: hasBody ? JSON.stringify(options.body) : null,
      read: (response) => this.json<T>(method, path, response),
    });
  }

  private async json<T>(method: string, path: string, response: Response): Promise<T> {
    // No content (a DELETE): nothing to parse.
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ParleyClientError(
        'bad_response',
        `${method} ${path}: the answer is not JSON`,
        response.status,
      );
    }
  }

  /** One try of a call, within the time limit: a non-2xx answer becomes a coded error. */
  private async attempt<T>(
    method: string,
    path: string,
    options: Pick<RequestOptions, 'query' | 'signal'>,
    call: {
      headers: Record<string, string>;
      body: RequestInit['body'];
      accept?: string;
      read: (response: Response) => Promise<T>;
    },
  ): Promise<T> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.options.timeoutMs ?? 30_000);
    const onAbort = () => controller.abort();
    if (options.signal?.aborted) controller.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await this.fetchImpl(this.url(path, options.query), {
        method,
        headers: {
          ...this.headers(call.headers),
          ...(call.accept ? { accept: call.accept } : {}),
        },
        body: call.body,
        ...noStore,
        signal: controller.signal,
      });
      if (!response.ok) throw await errorFrom(response);
      return await call.read(response);
    } catch (error) {
      if (error instanceof ParleyClientError) throw error;
      if (timedOut) throw new ParleyClientError('timeout', `${method} ${path} timed out`);
      throw controller.signal.aborted ? aborted() : networkError(error);
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  private url(path: string, query: RequestOptions['query'] = {}): string {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined && value !== null) search.set(key, String(value));
    }
    const encoded = search.toString();
    const suffix = encoded === '' ? '' : `?${encoded}`;
    return `${this.baseUrl}${path}${suffix}`;
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    return {
      accept: 'application/json',
      'parley-protocol-version': protocolVersion,
      ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
      ...extra,
    };
  }
}

/** A coded error from a non-2xx answer: the server's `error` code and its details. */
async function errorFrom(response: Response): Promise<ParleyClientError> {
  let body: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = JSON.parse(await response.text());
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
      body = parsed as Record<string, unknown>;
    }
  } catch {
    // not JSON (a proxy's error page): the status still tells what happened
  }
  const code = typeof body?.error === 'string' ? body.error : `http_${response.status}`;
  const message = typeof body?.message === 'string' ? body.message : `HTTP ${response.status}`;
  return new ParleyClientError(code, message, response.status, body);
}

function networkError(error: unknown): ParleyClientError {
  const cause = error instanceof Error ? error.message : String(error);
  return new ParleyClientError('network_error', `cannot reach the server: ${cause}`);
}

function aborted(): ParleyClientError {
  return new ParleyClientError('aborted', 'the call was aborted');
}
