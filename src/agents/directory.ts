import type { z } from 'zod';
import { checkAgentCredentials, compileAgent } from '../config/agents.js';
import { ConfigError } from '../config/errors.js';
import { defaultAgentName } from '../config/load.js';
import { compileMission } from '../config/missions.js';
import { agentSchema, missionSchema } from '../config/schema.js';
import type { AgentConfig, Config, MissionConfig } from '../config/types.js';
import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import type { DefinitionKind, DefinitionRow } from '../store/definitions.js';
import { definitionsVersion } from '../store/definitionsVersion.js';
import { readDefinitions } from '../store/readDefinitions.js';
import { seedDefinitions } from '../store/seedDefinitions.js';
import type { Wakeups } from '../store/wakeups.js';
import type { AgentLookup, MissionLookup } from './lookup.js';

type Env = Record<string, string | undefined>;

/** Where a definition a tenant sees comes from, for listings. */
export interface DefinitionInfo {
  namespace: string;
  is_customized: boolean;
  content_hash: string;
  /** The shipped hash a customized definition was edited from (null: created here). */
  shipped_content_hash: string | null;
  /** Customized, and the configuration has shipped another version since. */
  shipped_changed: boolean;
  updated_at: string;
  updated_by: string | null;
}

interface Compiled<T> {
  config: T;
  row: DefinitionRow;
}

/** What one load of the `definitions` table compiled: shipped ones, and each tenant's own. */
interface Snapshot {
  agents: Map<string, Map<string, Compiled<AgentConfig>>>;
  missions: Map<string, Map<string, Compiled<MissionConfig>>>;
}

/**
 * Agents and missions at runtime (issue 10): the database's definitions, compiled, per
 * tenant — a tenant's own (customized or created) over the shipped ones. Every process
 * keeps one, refreshed by a wake-up (`definitions`, sent by every write) and a poll of a
 * cheap version read (lost wake-ups), so workers use an edit from their next turn without
 * a restart. The API validates a definition here before writing it, exactly as start-up
 * validates the configuration.
 */
export class Directory {
  private snapshot: Snapshot = { agents: new Map(), missions: new Map() };
  private version = '';
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private loading: Promise<void> | null = null;
  private readonly warned = new Set<string>();

  readonly agents: AgentLookup = {
    get: (tenant, name) => this.find(this.snapshot.agents, tenant, name)?.config,
    list: (tenant) => this.all(this.snapshot.agents, tenant).map((entry) => entry.config),
    defaultName: (tenant) => {
      const shipped = defaultAgentName(this.deps.config);
      if (this.agents.get(tenant, shipped)) return shipped;
      return this.agents.list(tenant)[0]?.name ?? shipped;
    },
  };

  readonly missions: MissionLookup = {
    get: (tenant, name) => this.find(this.snapshot.missions, tenant, name)?.config,
    list: (tenant) => this.all(this.snapshot.missions, tenant).map((entry) => entry.config),
  };

  constructor(
    private readonly deps: { db: Db; config: Config; log: Logger; env: Env; pollMs: number },
  ) {}

  /** Seeds the shipped definitions from the configuration, then loads everything. */
  async seedAndLoad(): Promise<void> {
    const { config } = this.deps;
    const shipped = (definitions: Record<string, Record<string, unknown>>) =>
      Object.entries(definitions).map(([name, definition]) => ({
        name,
        namespace: namespaceOf(definition),
        definition,
      }));
    await seedDefinitions(this.deps.db, 'agent', shipped(config.shipped.agents));
    await seedDefinitions(this.deps.db, 'mission', shipped(config.shipped.missions));
    await this.load();
  }

  start(wakeups: Wakeups): void {
    this.unsubscribe ??= wakeups.subscribe((wakeup) => {
      if (wakeup.kind === 'definitions') void this.refresh();
    });
    this.timer ??= setInterval(() => void this.refresh(), this.deps.pollMs);
    this.timer.unref();
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Reloads if anything was written since the last load. Never throws (logged). */
  async refresh(): Promise<void> {
    try {
      if ((await definitionsVersion(this.deps.db)) !== this.version) await this.load();
    } catch (error) {
      this.deps.log.warn({ err: (error as Error).message }, 'refreshing definitions failed');
    }
  }

  /** Where the definition a tenant sees comes from (null: none). */
  info(kind: DefinitionKind, tenant: string, name: string): DefinitionInfo | null {
    const row = this.rowOf(kind, tenant, name);
    if (!row) return null;
    const shipped = this.rowOf(kind, '', name);
    return {
      namespace: row.namespace,
      is_customized: row.is_customized,
      content_hash: row.content_hash,
      shipped_content_hash: row.shipped_content_hash,
      shipped_changed:
        row.is_customized && shipped !== null && shipped.content_hash !== row.shipped_content_hash,
      updated_at: row.updated_at.toISOString(),
      updated_by: row.updated_by,
    };
  }

  /** The stored definition (file shape) a tenant sees, for admins. */
  definition(kind: DefinitionKind, tenant: string, name: string): Record<string, unknown> | null {
    return this.rowOf(kind, tenant, name)?.definition ?? null;
  }

  private rowOf(kind: DefinitionKind, tenant: string, name: string): DefinitionRow | null {
    const found =
      kind === 'agent'
        ? this.find(this.snapshot.agents, tenant, name)
        : this.find(this.snapshot.missions, tenant, name);
    return found?.row ?? null;
  }

  /**
   * Checks an agent definition as start-up checks the file (schema, providers, tools, the
   * provider's environment variables) and returns it with defaults applied; throws a
   * ConfigError naming the key.
   */
  checkAgent(name: string, raw: unknown): Record<string, unknown> {
    const parsed = parse(agentSchema, raw, `agents.${name}`);
    const agent = compileAgent(name, parsed, {
      providers: this.deps.config.providers,
      mcpServers: this.deps.config.mcpServers,
    });
    checkAgentCredentials(agent, this.deps.config.providers, this.deps.env);
    return parsed;
  }

  /** The same for a mission, against the agents this tenant has. */
  checkMission(tenant: string, name: string, raw: unknown): Record<string, unknown> {
    const parsed = parse(missionSchema, raw, `missions.${name}`);
    compileMission(name, parsed, this.missionContext(tenant));
    return parsed;
  }

  private missionContext(tenant: string) {
    return {
      hasAgent: (agent: string) => this.agents.get(tenant, agent) !== undefined,
      defaultAgent: defaultAgentName(this.deps.config),
      maxIterationsCap: this.deps.config.limits.missionIterations,
    };
  }

  private find<T>(
    map: Map<string, Map<string, Compiled<T>>>,
    tenant: string,
    name: string,
  ): Compiled<T> | undefined {
    return map.get(tenant)?.get(name) ?? (tenant === '' ? undefined : map.get('')?.get(name));
  }

  private all<T>(map: Map<string, Map<string, Compiled<T>>>, tenant: string): Compiled<T>[] {
    const merged = new Map(map.get('') ?? []);
    if (tenant !== '') for (const [name, entry] of map.get(tenant) ?? []) merged.set(name, entry);
    return [...merged.values()];
  }

  private async load(): Promise<void> {
    // One load at a time; a refresh that arrives meanwhile waits for it, then checks again.
    while (this.loading) await this.loading;
    this.loading = this.loadOnce();
    try {
      await this.loading;
    } finally {
      this.loading = null;
    }
  }

  private async loadOnce(): Promise<void> {
    const version = await definitionsVersion(this.deps.db);
    const rows = await readDefinitions(this.deps.db);
    const next: Snapshot = { agents: new Map(), missions: new Map() };
    const put = <T>(map: Map<string, Map<string, Compiled<T>>>, row: DefinitionRow, config: T) => {
      let tenant = map.get(row.tenant);
      if (!tenant) map.set(row.tenant, (tenant = new Map()));
      tenant.set(row.name, { config, row });
    };
    for (const row of rows.filter((candidate) => candidate.kind === 'agent')) {
      const compiled = this.compile(row, () =>
        compileAgent(row.name, agentSchema.parse(row.definition), {
          providers: this.deps.config.providers,
          mcpServers: this.deps.config.mcpServers,
        }),
      );
      if (compiled) put(next.agents, row, compiled);
    }
    this.snapshot = { agents: next.agents, missions: this.snapshot.missions };
    for (const row of rows.filter((candidate) => candidate.kind === 'mission')) {
      const compiled = this.compile(row, () =>
        compileMission(
          row.name,
          missionSchema.parse(row.definition),
          this.missionContext(row.tenant),
        ),
      );
      if (compiled) put(next.missions, row, compiled);
    }
    this.snapshot = next;
    this.version = version;
  }

  /**
   * A stored definition that no longer compiles (the configuration lost its provider, say)
   * is left out — that tenant does not have it — and reported once, not used half-way.
   */
  private compile<T>(row: DefinitionRow, work: () => T): T | null {
    try {
      return work();
    } catch (error) {
      const key = `${row.kind}:${row.tenant}:${row.name}:${row.content_hash}`;
      if (!this.warned.has(key)) {
        this.warned.add(key);
        this.deps.log.error(
          { kind: row.kind, tenant: row.tenant, name: row.name, err: (error as Error).message },
          'a stored definition does not compile; it is unavailable',
        );
      }
      return null;
    }
  }
}

/** Parses a definition with the file's schema; errors name the key, never the value. */
function parse<T>(schema: z.ZodType<T>, raw: unknown, where: string): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const key = [where, ...(issue?.path.map(String) ?? [])].join('.');
  throw new ConfigError(`${key}: ${issue?.message ?? 'invalid'}`);
}

/** A definition's namespace (every schema defaults it). */
export function namespaceOf(definition: Record<string, unknown>): string {
  return typeof definition.namespace === 'string' ? definition.namespace : 'default';
}
