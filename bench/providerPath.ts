import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { requestJson, SseStream } from './http.js';
import { now, type RemoteServer } from './remote.js';
import { median, percentile, round } from './stats.js';

/**
 * Parley's own overhead on the provider path (issue 7): a local OpenAI-style server (in
 * this, the client's, process: one clock for both ends) streams 200 tokens at a fixed pace
 * through the real `@ai-sdk/openai-compatible` client. Per turn: the moment the first
 * token leaves the provider, and the moment the first `text_delta` reaches the SSE
 * client; the difference is what Parley adds (the SDK's parsing, the journal write, the
 * wake-up, the SSE write). Also the journal's bytes per 1,000 reply tokens.
 */
export const pacedTokens = 200;
const paceMs = 2;

export class PacedProvider {
  /** When the first token of the reply to a turn marker left this server. */
  readonly firstTokenSent = new Map<string, number>();
  private server: Server | null = null;
  url = '';

  static async start(): Promise<PacedProvider> {
    const provider = new PacedProvider();
    provider.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.method === 'GET') {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(
            JSON.stringify({ object: 'list', data: [{ id: 'paced-200', object: 'model' }] }),
          );
          return;
        }
        const body = Buffer.concat(chunks).toString('utf8');
        // The last marker: the prompt carries the earlier turns' messages too.
        const marker = [...body.matchAll(/bench:([A-Za-z0-9_-]+)/g)].at(-1)?.[1] ?? null;
        void provider.stream(response, marker);
      });
    });
    await new Promise<void>((resolve) => provider.server?.listen(0, '127.0.0.1', resolve));
    provider.url = `http://127.0.0.1:${(provider.server.address() as AddressInfo).port}`;
    return provider;
  }

  private async stream(
    response: import('node:http').ServerResponse,
    marker: string | null,
  ): Promise<void> {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({
        id: 'chatcmpl-bench',
        object: 'chat.completion.chunk',
        created: 0,
        model: 'paced-200',
        choices: [{ index: 0, delta, finish_reason: null }],
        ...extra,
      })}\n\n`;
    response.write(chunk({ role: 'assistant', content: '' }));
    for (let index = 0; index < pacedTokens; index++) {
      if (index === 0 && marker !== null) this.firstTokenSent.set(marker, now());
      response.write(chunk({ content: `tok${index} ` }));
      await new Promise((resolve) => setTimeout(resolve, paceMs));
    }
    response.write(
      `data: ${JSON.stringify({
        id: 'chatcmpl-bench',
        object: 'chat.completion.chunk',
        created: 0,
        model: 'paced-200',
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: 20,
          completion_tokens: pacedTokens,
          total_tokens: pacedTokens + 20,
        },
      })}\n\n`,
    );
    response.end('data: [DONE]\n\n');
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

export async function measureProviderPath(server: RemoteServer, provider: PacedProvider) {
  const turns = 20;
  const created = await requestJson(server.url, 'POST', '/api/v1/chat/sessions', {
    agent: 'paced',
  });
  const sessionId = created.body.session_id as string;
  const sse = await SseStream.open(server.url, sessionId);
  const overheads: number[] = [];
  try {
    for (let index = 0; index < turns; index++) {
      const turnId = `paced_${randomBytes(4).toString('hex')}`;
      const mark = sse.frames.length;
      await requestJson(server.url, 'POST', '/api/v1/chat/turns', {
        session_id: sessionId,
        turn_id: turnId,
        message: `bench:${turnId} stream me two hundred tokens`,
      });
      const first = await sse.waitFor(
        (frame) => frame.event === 'text_delta' && frame.data.turn_id === turnId,
        mark,
        60_000,
      );
      await sse.waitFor(
        (frame) => frame.event === 'done' && frame.data.turn_ids?.includes(turnId),
        mark,
        60_000,
      );
      const sent = provider.firstTokenSent.get(turnId);
      if (sent !== undefined && index >= 2) overheads.push(first.receivedAt - sent);
    }
  } finally {
    sse.close();
  }
  const bytes = await server.query<{ bytes: number }>(
    `select coalesce(sum(pg_column_size(e.*)), 0)::bigint as bytes from events e where e.session_id = $1`,
    [sessionId],
  );
  return {
    turns,
    tokens_per_reply: pacedTokens,
    pace_ms_per_token: paceMs,
    first_token_overhead_p50_ms: round(percentile(overheads, 50)),
    first_token_overhead_p99_ms: round(percentile(overheads, 99)),
    first_token_overhead_median_ms: round(median(overheads)),
    journal_bytes_per_1000_reply_tokens: Math.round(
      (Number(bytes[0]?.bytes ?? 0) / (turns * pacedTokens)) * 1000,
    ),
  };
}
