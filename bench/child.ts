/**
 * The server process of the benchmark: bench/server.ts's composition (what `parley serve`
 * runs, instrumented), in its own process so that the client's timings are not distorted
 * by sharing an event loop with the server. Started by bench/remote.ts with fork(); takes
 * its storage from PARLEY_BENCH_STORAGE (JSON) and answers control calls over IPC.
 */
import { epochNow, measureFloor, snapshot, startBenchServer } from './server.js';

interface Call {
  id: number;
  method: string;
  args: unknown[];
}

const send = (message: unknown) =>
  new Promise<void>((resolve) => {
    if (process.send) process.send(message, undefined, undefined, () => resolve());
    else resolve();
  });

async function main(): Promise<void> {
  const storage = JSON.parse(process.env.PARLEY_BENCH_STORAGE ?? '{}') as {
    url: string | null;
    dataDir: string;
  };
  const server = await startBenchServer(storage);
  const handlers: Record<string, (...args: any[]) => unknown> = {
    now: () => epochNow(),
    startWorker: () => server.startWorker(),
    stopWorker: () => server.stopWorker(),
    setModelDelay: (ms: number) => server.setModelDelay(ms),
    setReply: (text: string | null) => server.setReply(text),
    observeDeltas: (on: boolean) => server.observeDeltas(on),
    counters: () => snapshot(server.counters),
    query: async (sql: string, params?: unknown[]) => (await server.raw.query(sql, params)).rows,
    floor: () => measureFloor(server.raw),
    marks: (turnIds: string[], commitKeys: string[]) => ({
      firstDelta: turnIds.map((id) => server.modelFirstDelta.get(id) ?? null),
      committed: commitKeys.map((key) => server.deltaCommitted.get(key) ?? null),
    }),
    close: async () => {
      await server.close();
      setImmediate(() => process.exit(0));
    },
  };
  process.on('message', (call: Call) => {
    const handler = handlers[call.method];
    Promise.resolve()
      .then(() => {
        if (!handler) throw new Error(`unknown call ${call.method}`);
        return handler(...call.args);
      })
      .then(
        (result) => send({ id: call.id, result }),
        (error: unknown) =>
          send({
            id: call.id,
            error: error instanceof Error ? (error.stack ?? error.message) : String(error),
          }),
      )
      .catch(() => process.exit(1));
  });
  // The parent going away must not leave a server behind.
  process.on('disconnect', () => {
    void server.close().finally(() => process.exit(0));
  });
  await send({ ready: true, url: server.url.href, engine: server.engine });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench server failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
