#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { adminCommand } from './admin.js';
import { chatCommand } from './chat/index.js';
import { missionsCommand } from './missions.js';
import { modelsCommand } from './models.js';
import { toolsCommand } from './tools.js';
import { webhooksCommand } from './webhooks.js';

// The commands that talk to a server through its API import only the client; the server
// side (configuration, storage, the app, providers) is loaded by the commands that run it,
// so `parley sessions list` answers without loading a server it does not start.

const usage = `parley — a durable chat-agent runtime

Usage:
  parley serve                 API + worker in one process (embedded storage unless DATABASE_URL)
  parley api                   the HTTP API alone (PostgreSQL only)
  parley worker                a worker alone (PostgreSQL only)
  parley migrate               apply database migrations and exit
  parley sessions list         list sessions (through the API: --url, --key)
  parley sessions show ID      one session's projection
  parley sessions unpark ID    resume a parked session
  parley models list           the model catalog with capabilities (through the API)
  parley models sync [PROVIDER]
                               refresh the catalog from the providers' model lists (admin)
  parley chat [--session ID] [--agent NAME]
                               chat in the terminal (through the API: --url, --key)
  parley prune --older-than-days N | --older-than-seconds N [--rules R,...] [--batch-size N]
                               remove your tenant's old rows and print what went, per table;
                               rules: events, deliveries (the default), sessions, usage
                               (docs/retention.md; old cursors then answer 410)
  parley tools list [--agent NAME]
                               every tool an agent has, its source and policy (through the API)
  parley webhooks status       outbound webhooks: pending, delivered, dead letters (admin, through the API)
  parley missions list         the missions of your tenant (through the API)
  parley missions run NAME [--input JSON] [--follow]
                               dispatch an execution; --follow shows its progress until it ends
  parley executions list [--mission M] [--status S]
  parley executions show ID | cancel ID
  parley schedules list        schedules with their next fire times

Options:
  --config PATH                configuration file (else PARLEY_CONFIG, else ./parley.yaml)
  --url URL                    server for sessions/prune/chat (default http://127.0.0.1:8080)
  --key KEY                    API key for sessions/prune/chat (else PARLEY_API_KEY)
`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      url: { type: 'string' },
      key: { type: 'string' },
      limit: { type: 'string' },
      'older-than-days': { type: 'string' },
      'older-than-seconds': { type: 'string' },
      rules: { type: 'string' },
      'batch-size': { type: 'string' },
      json: { type: 'boolean' },
      session: { type: 'string' },
      agent: { type: 'string' },
      input: { type: 'string' },
      follow: { type: 'boolean' },
      mission: { type: 'string' },
      status: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    process.stdout.write(usage);
    return command || values.help ? 0 : 2;
  }
  switch (command) {
    case 'serve':
    case 'api':
    case 'worker':
      return serve(command, values.config);
    case 'migrate': {
      const { loadConfig } = await import('../config/load.js');
      const { migrate } = await import('../store/migrate.js');
      const { openStore, describeStore } = await import('../store/open.js');
      const config = loadConfig({ path: values.config });
      const db = await openStore(config, { migrate: false });
      try {
        const applied = await migrate(db);
        process.stdout.write(
          applied.length
            ? `applied ${applied.join(', ')} to ${describeStore(config)}\n`
            : `${describeStore(config)} is up to date\n`,
        );
      } finally {
        await db.close();
      }
      return 0;
    }
    case 'sessions':
    case 'prune':
      return adminCommand(command, rest, values);
    case 'models':
      return modelsCommand(rest, values);
    case 'chat':
      return chatCommand(values);
    case 'tools':
      return toolsCommand(rest, values);
    case 'webhooks':
      return webhooksCommand(rest, values);
    case 'missions':
    case 'executions':
    case 'schedules':
      return missionsCommand(command, rest, values);
    default:
      process.stderr.write(`unknown command "${command}"\n\n${usage}`);
      return 2;
  }
}

async function serve(
  role: 'serve' | 'api' | 'worker',
  configPath: string | undefined,
): Promise<number> {
  const { loadConfig } = await import('../config/load.js');
  const { createLogger } = await import('../log.js');
  const { describeStartup, startProcess } = await import('./start.js');
  const config = loadConfig({ path: configPath });
  if (role !== 'serve' && !config.storage.url) {
    process.stderr.write(
      `parley ${role} needs PostgreSQL (set DATABASE_URL): embedded storage belongs to one process, use "parley serve"\n`,
    );
    return 2;
  }
  const log = createLogger();
  const running = await startProcess(
    config,
    { api: role !== 'worker', worker: role !== 'api' },
    log,
  );
  // The handlers first, then the lines that say the process is ready: a supervisor may
  // signal it the moment it reads them, and an unhandled SIGTERM kills the process at once.
  const stopped = new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      process.stdout.write(`parley ${role}: ${signal} received, releasing leases and stopping\n`);
      running.stop().then(resolve, (error: unknown) => {
        log.error({ err: (error as Error).message }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
  for (const line of describeStartup(config, running, role)) process.stdout.write(`${line}\n`);
  await stopped;
  process.stdout.write(`parley ${role}: stopped\n`);
  // Everything that had to finish has: leases released, streams ended, the database
  // closed. What may still hold the event loop — a client's keep-alive socket, a chat
  // platform client's timer — must not keep a stopped process alive until its supervisor
  // kills it.
  process.exit(0);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`parley: ${message}\n`);
    // Exit now: a half-started process must not linger (timers, sockets, the data dir).
    process.exit(1);
  },
);
