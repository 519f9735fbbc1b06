import { startProcess, type Running } from '../../src/cli/start.js';
import { createLogger } from '../../src/log.js';
import { testConfig } from './config.js';
import { freshStorage } from './db.js';

type Role = { api: boolean; worker: boolean };

export interface TestServer extends Running {
  url: string;
  config: ReturnType<typeof testConfig>;
  /** Stops the process parts and drops the test database. */
  close: () => Promise<void>;
  /**
   * Stops this process and starts another on the same database in `role` (the API alone,
   * say: then no background loop writes). Use the returned server; its `close` drops the
   * database.
   */
  restart: (role: Role) => Promise<TestServer>;
}

/** An in-process `parley serve` (API + worker) on a fresh database, on a random port. */
export async function startTestServer(
  overrides: Record<string, unknown> = {},
  env: Record<string, string> = {},
  role: Role = { api: true, worker: true },
): Promise<TestServer> {
  const fresh = await freshStorage();
  const config = testConfig(fresh.storage, overrides, env);
  return launch(config, env, role, fresh.drop);
}

async function launch(
  config: ReturnType<typeof testConfig>,
  env: Record<string, string>,
  role: Role,
  drop: () => Promise<void>,
): Promise<TestServer> {
  const running = await startProcess(config, role, createLogger({ level: 'silent' }), {
    env: { ...process.env, ...env },
    // Every JSON response a test provokes is held to its route's schema.
    checkResponses: true,
  });
  return {
    ...running,
    url: running.url ?? '',
    config,
    close: async () => {
      await running.stop();
      await drop();
    },
    restart: async (next) => {
      await running.stop();
      return launch(config, env, next, drop);
    },
  };
}

/** JSON over HTTP with the protocol header, as a well-behaved client sends it. */
export async function request(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      'parley-protocol-version': '1',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (metrics)
  }
  return { status: response.status, body: parsed, headers: response.headers };
}
