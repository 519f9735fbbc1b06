import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app.js';
import type { PlatformsRunning } from '../adapters/startup.js';
import { assertBindAllowed } from '../api/principal.js';
import { configuredPlatforms } from '../config/platformTypes.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log.js';
import type { CatalogProblem } from '../catalog/check.js';
import { startCatalogRefresh } from '../catalog/refresh.js';
import { refreshAndCheckCatalog } from '../catalog/startup.js';
import { syncCatalog } from '../catalog/sync.js';
import type { Env } from '../providers/credentials.js';
import { createImageModelRegistry, priceImages } from '../providers/images.js';
import { createModelRegistry } from '../providers/registry.js';
import { startModelInfo } from '../runtime/modelInfo.js';
import { Directory } from '../agents/directory.js';
import { ExecutionRunner } from '../missions/runner.js';
import { Scheduler, seedConfiguredSchedules } from '../missions/scheduler.js';
import { startApprovalTimer } from '../runtime/approvalTimer.js';
import { seedBudgets } from '../store/seedBudgets.js';
import { startRetention } from '../runtime/retention.js';
import { Worker } from '../runtime/worker.js';
import { startWebhooks } from '../webhooks/loop.js';
import { a2aPushComposer, pushEnabled, pushPoster } from '../api/a2a/pushNotifications.js';
import { McpManager, describeMcp } from '../tools/mcp/manager.js';
import { builtInTools, ToolRegistry, type ToolIo } from '../tools/registry.js';
import { checkShellSandboxes } from '../tools/shell/startup.js';
import { checkAgentSkills, loadSkillCatalog, type SkillCatalog } from '../tools/skills/catalog.js';
import type { Db } from '../store/db.js';
import { describeStore, openStore } from '../store/open.js';
import { releaseDeadExecutionLeases } from '../store/releaseExecution.js';
import { releaseDeadLeases } from '../store/releaseLease.js';
import { releaseOutboxLeases } from '../store/releaseOutboxLeases.js';
import { createSpeech } from '../speech/speech.js';
import { Wakeups } from '../store/wakeups.js';
import { noTelemetry, type Telemetry } from '../telemetry/tracing.js';
import { circuitReporter } from './circuitReporter.js';
import { Stops } from './stops.js';

export interface Running {
  db: Db;
  app: FastifyInstance | null;
  worker: Worker | null;
  /** The worker role's execution runner (missions). */
  executions: ExecutionRunner | null;
  scheduler: Scheduler | null;
  /** Agents and missions of every tenant, as the database has them now. */
  directory: Directory;
  url: string | null;
  /** Agents whose model the catalog does not know or that lack a needed capability. */
  catalogProblems: CatalogProblem[];
  /** Every tool of the process: built-ins and the MCP servers' tools as they come and go. */
  tools: ToolRegistry;
  /** The skills of `skills_dir`, read at start (for the system prompt: `skillsPrompt`). */
  skills: SkillCatalog;
  mcp: McpManager;
  /** Start-up lines about tools: which shell sandbox each agent uses. */
  toolLines: string[];
  /** The process's spans (`telemetry.otlp_endpoint`); flushed by `stop`. */
  telemetry: Telemetry;
  stop: () => Promise<void>;
}

/** Parts a test may swap: the built-in tools' I/O, the sandbox's programs. */
export interface ProcessOptions {
  /** The environment credentials and tool variables come from (default process.env). */
  env?: Env;
  toolIo?: ToolIo;
  bwrap?: string;
  slirp4netns?: string;
  /** The scheduler's clock (tests freeze and advance it). */
  now?: () => Date;
  /** Hold every JSON response to its route's schema (the test suite). */
  checkResponses?: boolean;
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
  if (role.api) await assertBindAllowed(config);
  const env = options.env ?? process.env;
  const skills = loadSkillCatalog(config.skillsDir);
  const skillProblems = checkAgentSkills(skills, config.agents, config.skillsDir);
  if (skillProblems.length > 0) throw new Error(skillProblems.join('\n'));
  // Only workers run tools: only they need a working sandbox.
  const toolLines = role.worker
    ? await checkShellSandboxes(config, {
        ...(options.bwrap ? { bwrap: options.bwrap } : {}),
        ...(options.slirp4netns ? { slirp4netns: options.slirp4netns } : {}),
      })
    : [];
  const db = await openStore(config);
  const stops = new Stops(log);
  stops.add('database', () => db.close());
  const stopAll = () => stops.stopAll();
  try {
    const catalog = { db, config, log, env };
    const catalogProblems = await refreshAndCheckCatalog(catalog);
    if (db.engine === 'pglite' && role.worker) {
      // The data-directory lock proves no other process lives: leases left by one that
      // died are dead, and their sessions can be claimed at once instead of after a ttl.
      const released = await releaseDeadLeases(db);
      if (released > 0) log.info({ sessions: released }, 'released the leases of a previous run');
      // Likewise the platform outbox's and the webhook deliveries' sender leases.
      await releaseOutboxLeases(db);
      // The same for executions' leases: their timers are claimable at once.
      await releaseDeadExecutionLeases(db);
    }
    const wakeups = new Wakeups(db);
    await wakeups.start();
    stops.add('wake-ups', () => wakeups.stop());
    // Loaded only when configured; stopped after the worker and the API, so their last
    // spans are sent.
    let telemetry: Telemetry = noTelemetry;
    if (config.telemetry.tracesUrl !== null) {
      const started = (await import('../telemetry/otel.js')).startTelemetry(config, {
        env,
        log,
        instance: `${hostname()}:${process.pid}`,
      });
      telemetry = started;
      stops.add('telemetry', () => started.shutdown());
    }
    const resolveModel = createModelRegistry(config, env, circuitReporter(db, log));
    const images = {
      model: createImageModelRegistry(config, env),
      cost: (model: string, call: Parameters<typeof priceImages>[2]) =>
        priceImages(config, model, call),
    };
    const tools = new ToolRegistry(builtInTools({ db, skills, env, images, ...options.toolIo }));
    // Both roles need the MCP tools: workers run them, the API lists them.
    const mcp = new McpManager(config.mcpServers, tools, { env, log });
    await mcp.start();
    stops.add('MCP servers', () => mcp.stop());

    // Agents and missions live in the database, seeded from the configuration.
    const directory = new Directory({
      db,
      config,
      log,
      env,
      pollMs: config.runtime.pollMs,
      skills,
      ...(options.bwrap ? { bwrap: options.bwrap } : {}),
    });
    await directory.seedAndLoad();
    directory.start(wakeups);
    stops.add('directory', () => directory.stop());
    const { agents, missions } = directory;
    await seedBudgets(db, config.budgets);
    await seedConfiguredSchedules({ db, config, ...(options.now ? { now: options.now } : {}) });

    // Chat platforms: inbound endpoints on the API, their outbox and the
    // outbound webhooks delivered by workers.
    // Loaded only when configured: the platforms' SDKs take seconds to import.
    const platforms: PlatformsRunning =
      configuredPlatforms(config.adapters).length > 0
        ? await (
            await import('../adapters/startup.js')
          ).startPlatforms({ db, wakeups, config, env, log, role, agents })
        : { set: null, listening: () => {}, stop: async () => {} };
    stops.add('chat platforms', () => platforms.stop());
    // A2A push notifications are deliveries of the same loop, to the clients' URLs.
    const pushSettings = config.a2a.pushNotifications;
    const a2aPushes = pushEnabled(pushSettings)
      ? {
          composer: a2aPushComposer,
          post: pushPoster(pushSettings),
          timeoutMs: pushSettings.timeoutMs,
          maxAttempts: pushSettings.maxAttempts,
          retryBaseMs: pushSettings.retryBaseMs,
        }
      : null;
    if (role.worker && (Object.keys(config.webhooks).length > 0 || a2aPushes)) {
      const webhooks = await startWebhooks({
        db,
        wakeups,
        webhooks: config.webhooks,
        env,
        log,
        pollMs: config.runtime.pollMs,
        leaseMs: config.runtime.leaseTtlMs,
        a2aPushes,
      });
      stops.add('webhooks', webhooks.stop);
    }
    let worker: Worker | null = null;
    let executions: ExecutionRunner | null = null;
    let scheduler: Scheduler | null = null;
    if (role.worker) {
      // The catalog as prompt assembly reads it on every turn: in memory, refreshed.
      const modelInfo = startModelInfo(db, {
        refreshMs: 60_000,
        onError: (error) => log.warn({ err: (error as Error).message }, 'catalog read failed'),
      });
      await modelInfo.refresh();
      stops.add('model catalog', modelInfo.stop);
      const started = new Worker({
        db,
        wakeups,
        config,
        resolveModel,
        log,
        owner: `${hostname()}:${process.pid}`,
        tools,
        modelInfo: modelInfo.lookup,
        skills,
        agents,
        telemetry,
      });
      worker = started;
      started.start();
      stops.add('worker', () => started.stop());
      const executionDeps = {
        db,
        wakeups,
        config,
        resolveModel,
        agents,
        missions,
        log,
        telemetry,
        owner: `${hostname()}:${process.pid}`,
        ...(options.now ? { now: options.now } : {}),
      };
      const runner = new ExecutionRunner(executionDeps);
      executions = runner;
      runner.start();
      stops.add('executions', () => runner.stop());
      const firing = new Scheduler(executionDeps);
      scheduler = firing;
      firing.start();
      stops.add('scheduler', () => firing.stop());
      const approvalTimer = startApprovalTimer({
        db,
        wakeups,
        log,
        pollMs: config.runtime.pollMs,
      });
      stops.add('approval timer', () => approvalTimer.stop());
      stops.add('retention', startRetention({ db, config, log }));
      // Workers refresh the catalog; an API-only process reads what they wrote.
      stops.add(
        'catalog refresh',
        startCatalogRefresh({
          sync: () => syncCatalog(catalog),
          intervalMs: config.catalog.refreshHours * 3_600_000,
          onError: (error) => log.warn({ err: (error as Error).message }, 'catalog refresh failed'),
        }).stop,
      );
    }

    let app: FastifyInstance | null = null;
    let url: string | null = null;
    if (role.api) {
      const built = await buildApp({
        db,
        wakeups,
        config,
        log,
        providersReady: () => providersReady(config, resolveModel),
        syncModels: (provider) => syncCatalog(catalog, provider),
        tools,
        mcpStatus: () => mcp.status(),
        platforms: platforms.set,
        agents,
        missions,
        directory,
        telemetry,
        speech: createSpeech(config, { env }),
        checkResponses: options.checkResponses ?? false,
        ...(worker ? { handoff: worker } : {}),
      });
      app = built;
      stops.add('API', () => built.close());
      url = await built.listen({ host: config.server.host, port: config.server.port });
      platforms.listening(url);
    }

    let stopping: Promise<void> | null = null;
    const stop = () => (stopping ??= stopAll());
    return {
      db,
      app,
      worker,
      executions,
      scheduler,
      directory,
      url,
      catalogProblems,
      tools,
      skills,
      mcp,
      toolLines,
      telemetry,
      stop,
    };
  } catch (error) {
    // A failed start (the port is taken, say) must not leave a worker running without an
    // API, holding the data directory: stop whatever started, then fail.
    await stopAll().catch(() => {});
    throw error;
  }
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
  if (config.telemetry.tracesUrl !== null) {
    lines.push(
      `parley ${role}: spans exported to ${new URL(config.telemetry.tracesUrl).origin} (OTLP ${config.telemetry.protocol})`,
    );
  }
  const platforms = configuredPlatforms(config.adapters).map((adapter) => adapter.platform);
  if (platforms.length > 0) {
    lines.push(
      `parley ${role}: chat platforms ${platforms.join(', ')}${running.app ? ' (inbound on /adapters/…)' : ''}${running.worker ? ', replies delivered here' : ''}`,
    );
  }
  const webhooks = Object.keys(config.webhooks);
  if (webhooks.length > 0 && running.worker) {
    lines.push(`parley ${role}: outbound webhooks ${webhooks.join(', ')}`);
  }
  for (const line of [...running.toolLines, ...describeMcp(running.mcp.status())]) {
    lines.push(`parley ${role}: ${line}`);
  }
  return lines;
}
