// Test files that never open a database: configuration parsing, tool runners, provider
// protocols, the sandbox. They run once, in the PGlite leg; running them again on
// PostgreSQL would test nothing new. freshStorage() refuses to serve a file listed here,
// so a listed file that starts to use the database fails instead of losing its
// PostgreSQL run.
export const engineFreeFiles = [
  'adapters-config',
  'adapters-deadline-clients',
  'approval-cards',
  'approval-nudges',
  'bench-charts',
  'catalog-refresh',
  'completion-text',
  'config-providers',
  'config',
  'evaluator',
  'gate',
  'http-fetch',
  'image-providers',
  'interruption-parts',
  'mcp',
  'missions-config',
  'prompt',
  'provider-circuit',
  'providers',
  'shell',
  'skills',
  'soak-budget-check',
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
