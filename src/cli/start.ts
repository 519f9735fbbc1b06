import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app.js';
import { assertBindAllowed } from '../api/principal.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import { createModelRegistry } from '../providers/registry.js';
import { startRetention } from '../runtime/retention.js';
import { Worker } from '../runtime/worker.js';
import { McpManager, describeMcp } from '../tools/mcp/manager.js';
import { builtInTools, ToolRegistry, type ToolIo } from '../tools/registry.js';
import { checkShellSandboxes } from '../tools/shell/startup.js';
import { checkAgentSkills, loadSkillCatalog, type SkillCatalog } from '../tools/skills/catalog.js';
import type { Db } from '../store/db.js';
import { describeStore, openStore } from '../store/open.js';
import { Wakeups } from '../store/wakeups.js';

export interface Running {
  db: Db;
  app: FastifyInstance | null;
  worker: Worker | null;
  url: string | null;
  /** Every tool of the process: built-ins and the MCP servers' tools as they come and go. */
  tools: ToolRegistry;
  /** The skills of `skills_dir`, read at start (for the system prompt: `skillsPrompt`). */
  skills: SkillCatalog;
  mcp: McpManager;
  /** Start-up lines about tools: which shell sandbox each agent uses. */
  toolLines: string[];
  stop: () => Promise<void>;
}

/** Parts a test may swap: the built-in tools' I/O, the bubblewrap program. */
export interface ProcessOptions {
  toolIo?: ToolIo;
  bwrap?: string;
}

/**
 * Composes a Parley process from its parts: `serve` = api + worker, `api` and `worker`
 * alone (PostgreSQL only: embedded storage belongs to one process). The only place where
 * api and runtime meet in code; at run time they meet only in the store.
 */
export async function startProcess(
  config: Config,
  role: { api: boolean; worker: boolean },
  log: Logger,
  options: ProcessOptions = {},
): Promise<Running> {
  if (role.api) assertBindAllowed(config);
  const skills = loadSkillCatalog(config.skillsDir);
  const skillProblems = checkAgentSkills(skills, config.agents, config.skillsDir);
  if (skillProblems.length > 0) throw new Error(skillProblems.join('\n'));
  // Only workers run tools: only they need a working sandbox.
  const toolLines = role.worker ? checkShellSandboxes(config, options.bwrap) : [];
  const db = await openStore(config);
  const wakeups = new Wakeups(db);
  await wakeups.start();
  const resolveModel = createModelRegistry(config);
  const tools = new ToolRegistry(builtInTools({ db, skills, env: process.env, ...options.toolIo }));
  // Both roles need the MCP tools: workers run them, the API lists them.
  const mcp = new McpManager(config.mcpServers, tools, { env: process.env, log });
  await mcp.start();

  let worker: Worker | null = null;
  let stopRetention = () => {};
  if (role.worker) {
    worker = new Worker({
      db,
      wakeups,
      config,
      resolveModel,
      log,
      owner: `${hostname()}:${process.pid}`,
      tools,
    });
    worker.start();
    stopRetention = startRetention({
      db,
      keepEventsDays: config.retention.keepEventsDays,
      intervalMs: config.retention.pruneIntervalMs,
      log,
    });
  }

  let app: FastifyInstance | null = null;
  let url: string | null = null;
  if (role.api) {
    app = await buildApp({
      db,
      wakeups,
      config,
      log,
      providersReady: () => providersReady(config, resolveModel),
      tools,
      mcpStatus: () => mcp.status(),
    });
    url = await app.listen({ host: config.server.host, port: config.server.port });
  }

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      stopRetention();
      await app?.close();
      await worker?.stop();
      await mcp.stop();
      await wakeups.stop();
      await db.close();
    })());
  return { db, app, worker, url, tools, skills, mcp, toolLines, stop };
}

function providersReady(config: Config, resolve: ReturnType<typeof createModelRegistry>): boolean {
  try {
    for (const agent of Object.values(config.agents))
      resolve(agent.model.provider, agent.model.modelId);
    return true;
  } catch {
    return false;
  }
}

export function describeStartup(config: Config, running: Running, role: string): string[] {
  const lines = [`parley ${role}: storage ${describeStore(config)}`];
  if (running.url) lines.push(`parley ${role}: listening on ${running.url}`);
  lines.push(
    config.auth.mode === 'dev'
      ? `parley ${role}: mode dev — single local principal (tenant "default", user "local"), loopback only, no API keys`
      : `parley ${role}: mode keys — ${config.auth.keys.length} API key(s) configured`,
  );
  if (running.worker) {
    lines.push(
      `parley ${role}: worker claiming up to ${config.runtime.maxParallelTurns} sessions, lease ttl ${config.runtime.leaseTtlMs} ms`,
    );
  }
  for (const line of [...running.toolLines, ...describeMcp(running.mcp.status())]) {
    lines.push(`parley ${role}: ${line}`);
  }
  return lines;
}
