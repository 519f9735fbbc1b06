// Which test files run in which leg of `npm test` (vitest.config.ts). Every file runs in
// the PGlite leg but *.postgres.test.ts; the PostgreSQL leg leaves out the two lists here.
//
// Files that never open a database: configuration parsing, tool runners, provider
// protocols, the sandbox. Running them again on PostgreSQL would test nothing new.
// freshStorage() refuses to serve a file listed here, so a listed file that starts to use
// the database fails instead of losing its PostgreSQL run.
export const engineFreeFiles = [
  'adapters-config',
  'adapters-deadline-clients',
  'approval-cards',
  'approval-nudges',
  'bench-charts',
  'catalog-refresh',
  'completion-chunks',
  'completion-text',
  'config-providers',
  'config',
  'evaluator',
  'gate',
  'http-fetch',
  'image-providers',
  'inbound-images',
  'interruption-parts',
  'legs',
  'linked-signal',
  'mcp',
  'missions-config',
  'prompt',
  'provider-circuit',
  'providers',
  'shell',
  'skills',
  'soak-budget-check',
  'soak-push-check',
  'soak-user-stream-check',
  'soak-plan',
  'speech-config',
  'sse-writer',
  'tool-runner',
  'tools',
  'web-cards',
  'web-model',
].map((name) => `test/${name}.test.ts`);

/** Whether the test file at `path` is one of the database-free files. */
export function isEngineFree(path: string): boolean {
  return engineFreeFiles.some((file) => path.endsWith(file));
}

/**
 * Files of the surfaces over the store: the chat platforms, the open protocols, the client
 * SDK and `useChat` transport, the shell's limits, telemetry. They open a database,
 * but what they test is the surface, not the engine: the queries they reach are the
 * store's (src/store), and on PostgreSQL the fuzzer (test/fuzz.test.ts, both engines) first
 * fills nearly every table by real use of these surfaces, then sends every route real and
 * malformed requests. They run in the PGlite leg: the quickstart's engine, whose one
 * connection is also where a route that queries outside its own transaction would hang.
 * How several processes share PostgreSQL is tested in the *.postgres.test.ts files.
 */
export const surfaceFiles = [
  'a2a',
  'a2a-v03',
  'adapters-deadlines',
  'adapters-delivery',
  'adapters-discord',
  'adapters-gateway',
  'adapters-gchat',
  'adapters-restart',
  'adapters-slack',
  'adapters-slack-identity',
  'adapters-teams',
  'adapters-telegram',
  'ag-ui',
  'ai-sdk',
  'ai-sdk-chat',
  'cli-missions',
  'client',
  'client-media',
  'hardening',
  'mcp-server',
  'openai-api',
  'platform-turn-ids',
  'provider-timeouts',
  'request-deadline',
  'shell-limits',
  'telemetry',
  'tools-api',
  'web-static',
].map((name) => `test/${name}.test.ts`);
