/**
 * The first-token latency each protocol adapter adds over Parley's own SSE
 * (docs/benchmarks.md, "Protocol adapters"): one `parley serve` in this process
 * on a fresh embedded store (or PostgreSQL with PARLEY_BENCH_DATABASE_URL), the demo model
 * with no delay, and for each path the time from sending the message to reading its first
 * reply text — Parley's `POST /api/v1/chat/turns` then its event stream, the OpenAI
 * Responses stream, the Chat Completions stream, an AG-UI run, an A2A streaming send (its
 * first artifact chunk), an MCP `tools/call` with a
 * progressToken (its first text in a progress notification; the MCP session is initialized
 * once). Rounds interleave the paths so that
 * the machine's drift touches them alike; the figures are medians and p90s of one run.
 *
 *   node --import tsx bench/adapters.ts [rounds]
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startProcess } from '../src/cli/start.js';
import { compileConfig } from '../src/config/load.js';
import { createLogger } from '../src/log.js';
import { median, percentile, round } from './stats.js';

const rounds = Number(process.argv[2] ?? 60);
const key = 'bench-adapters-key';

/** Reads an SSE response until `found` accepts a frame's data; returns when it did. */
async function untilFrame(response: Response, found: (data: string) => boolean): Promise<void> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error('the stream ended before its first text');
      buffered += decoder.decode(value, { stream: true });
      let end = buffered.indexOf('\n\n');
      while (end !== -1) {
        const frame = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        for (const line of frame.split('\n')) {
          if (line.startsWith('data: ') && found(line.slice(6))) return;
        }
        end = buffered.indexOf('\n\n');
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-adapters-'));
  const url = process.env.PARLEY_BENCH_DATABASE_URL ?? null;
  const config = compileConfig(
    {
      server: { host: '127.0.0.1', port: 0 },
      storage: { url, data_dir: dataDir },
      auth: { keys: [{ key_env: 'BENCH_KEY', tenant: 'bench', user: 'bench', roles: [] }] },
      agents: { default: { model: 'demo/echo' } },
    },
    { PARLEY_DEMO_DELAY_MS: '0', BENCH_KEY: key },
    'bench',
  );
  const running = await startProcess(
    config,
    { api: true, worker: true },
    createLogger({ level: 'silent' }),
    {
      env: { ...process.env, BENCH_KEY: key },
    },
  );
  const base = running.url as string;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  const initialized = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...headers, accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'bench', version: '1' },
      },
    }),
  });
  await initialized.text();
  const mcpHeaders = {
    ...headers,
    accept: 'application/json, text/event-stream',
    'mcp-session-id': initialized.headers.get('mcp-session-id') ?? '',
    'mcp-protocol-version': '2025-11-25',
  };
  let mcpRequest = 0;

  const paths: Record<string, () => Promise<number>> = {
    parley: async () => {
      const started = performance.now();
      const admitted = await fetch(`${base}/api/v1/chat/turns`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ turn_id: `b_${randomUUID()}`, message: 'hello bench' }),
      });
      const admission = (await admitted.json()) as { session_id: string; sequence: number };
      const stream = await fetch(
        `${base}/api/v1/chat/sessions/${admission.session_id}/events?after=${admission.sequence}`,
        { headers },
      );
      await untilFrame(stream, (data) => data.includes('"type":"text_delta"'));
      return performance.now() - started;
    },
    'openai responses': async () => {
      const started = performance.now();
      const stream = await fetch(`${base}/openai/v1/responses`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'default', input: 'hello bench', stream: true }),
      });
      await untilFrame(stream, (data) => data.includes('"response.output_text.delta"'));
      return performance.now() - started;
    },
    'openai chat completions': async () => {
      const started = performance.now();
      const stream = await fetch(`${base}/openai/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          model: 'default',
          messages: [{ role: 'user', content: 'hello bench' }],
          stream: true,
        }),
      });
      await untilFrame(stream, (data) => /"content":"[^"]/.test(data));
      return performance.now() - started;
    },
    'ag-ui': async () => {
      const started = performance.now();
      const stream = await fetch(`${base}/ag-ui/default`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          threadId: randomUUID(),
          runId: randomUUID(),
          messages: [{ id: 'm', role: 'user', content: 'hello bench' }],
        }),
      });
      await untilFrame(stream, (data) => data.includes('"TEXT_MESSAGE_CONTENT"'));
      return performance.now() - started;
    },
    'a2a SendStreamingMessage': async () => {
      const started = performance.now();
      const stream = await fetch(`${base}/a2a/default`, {
        method: 'POST',
        headers: { ...headers, accept: 'text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendStreamingMessage',
          params: {
            message: {
              messageId: randomUUID(),
              role: 'ROLE_USER',
              parts: [{ text: 'hello bench' }],
            },
          },
        }),
      });
      await untilFrame(stream, (data) => data.includes('"artifactUpdate"') && data.includes('You'));
      return performance.now() - started;
    },
    'mcp tools/call': async () => {
      const started = performance.now();
      mcpRequest += 1;
      const stream = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: mcpHeaders,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: mcpRequest,
          method: 'tools/call',
          params: {
            name: 'default',
            arguments: { message: 'hello bench' },
            _meta: { progressToken: mcpRequest },
          },
        }),
      });
      await untilFrame(stream, (data) => data.includes('"message":"You'));
      return performance.now() - started;
    },
  };

  const samples = new Map<string, number[]>(Object.keys(paths).map((name) => [name, []]));
  // Warm-up: every path a few times, not counted.
  for (let index = 0; index < 5; index++) for (const run of Object.values(paths)) await run();
  for (let index = 0; index < rounds; index++) {
    const order = Object.keys(paths);
    // Each round in a rotated order: no path always runs first after a pause.
    const rotated = [...order.slice(index % order.length), ...order.slice(0, index % order.length)];
    for (const name of rotated)
      samples.get(name)?.push(await (paths[name] as () => Promise<number>)());
  }
  await running.stop();
  rmSync(dataDir, { recursive: true, force: true });

  const ownMedian = median(samples.get('parley') ?? []);
  const rows = [...samples].map(([name, values]) => ({
    path: name,
    p50_ms: round(median(values), 2),
    p90_ms: round(percentile(values, 90), 2),
    added_p50_ms: round(median(values) - ownMedian, 2),
  }));
  const figures = {
    at: new Date().toISOString(),
    engine: url ? 'postgres' : 'pglite',
    rounds,
    rows,
  };
  console.log(`first reply text, ${rounds} interleaved rounds (${figures.engine}):`);
  console.log('| path | p50 ms | p90 ms | added p50 ms |');
  console.log('| --- | --- | --- | --- |');
  for (const row of rows) {
    console.log(`| ${row.path} | ${row.p50_ms} | ${row.p90_ms} | ${row.added_p50_ms} |`);
  }
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'adapters.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(figures, null, 2)}\n`);
}

await main();
