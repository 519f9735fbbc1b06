/**
 * The operator commands' one way to call a running server: `--url` (else PARLEY_URL, else
 * the default address) and `--key` (else PARLEY_API_KEY). An error answer becomes an
 * Error with the server's code and message.
 */
export function apiCaller(options: { url?: string | undefined; key?: string | undefined }) {
  const base = (options.url ?? process.env.PARLEY_URL ?? 'http://127.0.0.1:8080').replace(
    /\/$/,
    '',
  );
  const key = options.key ?? process.env.PARLEY_API_KEY;
  return async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers: {
          'parley-protocol-version': '1',
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? null : JSON.stringify(body),
      });
    } catch {
      throw new Error(`cannot reach a Parley server at ${base} (is it running? use --url)`);
    }
    const payload = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`${String(payload.error)}: ${String(payload.message)}`);
    return payload;
  };
}
