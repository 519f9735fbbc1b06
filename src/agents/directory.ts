import { checkAgentCredentials, compileAgent } from '../config/agents.js';
import { defaultAgentName } from '../config/load.js';
import { compileMission } from '../config/missions.js';
import { agentSchema, missionSchema } from '../config/schema.js';
import type { AgentConfig, Config, MissionConfig } from '../config/types.js';
import { createSandboxCheck } from '../tools/shell/startup.js';
import type { SkillCatalog } from '../tools/skills/catalog.js';
import type { Logger } from '../log.js';
import type { Db } from '../store/db.js';
import type { DefinitionKind, DefinitionRow } from '../store/definitions.js';
import { definitionsVersion } from '../store/definitionsVersion.js';
import { readDefinitionRevision } from '../store/readDefinitionRevision.js';
import { readDefinitions } from '../store/readDefinitions.js';
import { seedDefinitions } from '../store/seedDefinitions.js';
import type { Wakeups } from '../store/wakeups.js';
import type { AgentLookup, MissionLookup } from './lookup.js';
import {
  compileTenantAgent,
  compileTenantMission,
  missionContext,
  type TenantCompileDeps,
} from './tenantDefinitions.js';

type Env = Record<string, string | undefined>;

/** Where a definition a tenant sees comes from, for listings. */
export interface DefinitionInfo {
  namespace: string;
  is_customized: boolean;
  content_hash: string;
  /** Raised by every write of it: what a turn records as its `agent_revision`. */
  revision: number;
  /** The shipped hash a customized definition was edited from (null: created here). */
  shipped_content_hash: string | null;
  /** Customized, and the configuration has shipped another version since. */
  shipped_changed: boolean;
  /**
   * Why this tenant's stored definition is not used (it no longer satisfies the
   * operator's policy or configuration), else null.
   */
  refused: string | null;
  updated_at: string;
  updated_by: string | null;
}

/** A stored definition, compiled; `config` null when it was refused (see `refused`). */
interface Compiled<T> {
  config: T | null;
  row: DefinitionRow;
  refused: string | null;
}

/** What one load of the `definitions` table compiled: shipped ones, and each tenant's own. */
interface Snapshot {
  agents: Map<string, Map<string, Compiled<AgentConfig>>>;
  missions: Map<string, Map<string, Compiled<MissionConfig>>>;
}

/**
 * Agents and missions at runtime: the database's definitions, compiled, per
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
    get: (tenant, name) => this.find(this.snapshot.agents, tenant, name)?.config ?? undefined,
    list: (tenant) => configs(this.all(this.snapshot.agents, tenant)),
    refused: (tenant, name) => this.find(this.snapshot.agents, tenant, name)?.refused ?? null,
    revision: (tenant, name) => {
      const entry = this.find(this.snapshot.agents, tenant, name);
      return entry?.config ? entry.row.revision : null;
    },
    pinned: (tenant, name, revision) => this.pinnedAgent(tenant, name, revision),
    defaultName: (tenant) => {
      const shipped = defaultAgentName(this.deps.config);
      // A refused default stays the default: its turns say so, never another agent's.
      if (this.agents.get(tenant, shipped) || this.agents.refused?.(tenant, shipped)) {
        return shipped;
      }
      return this.agents.list(tenant)[0]?.name ?? shipped;
    },
  };

  readonly missions: MissionLookup = {
    get: (tenant, name) => this.find(this.snapshot.missions, tenant, name)?.config ?? undefined,
    list: (tenant) => configs(this.all(this.snapshot.missions, tenant)),
    revision: (tenant, name) => {
      const entry = this.find(this.snapshot.missions, tenant, name);
      return entry?.config ? entry.row.revision : null;
    },
  };

  /** Agents compiled from kept revisions, for the turns pinned to them (see `pinnedAgent`). */
  private readonly revisions = new Map<string, Promise<AgentConfig | null>>();

  /** Whether bubblewrap works here (run once, when a definition first needs it). */
  private readonly sandboxProblem: () => string | null;

  constructor(
    private readonly deps: {
      db: Db;
      config: Config;
      log: Logger;
      env: Env;
      pollMs: number;
      /** The bubblewrap program (tests name a missing one). */
      bwrap?: string;
      /** The skills of `skills_dir`: a definition's skills must be there, as at start-up. */
      skills?: SkillCatalog;
    },
  ) {
    this.sandboxProblem = createSandboxCheck(deps.config.tools.workspaceDir, deps.bwrap);
  }

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

  /**
   * The agent `name` as `tenant` saw it at `revision`: the current one when it is still
   * that revision, else compiled from `definition_history` the way a load compiles it (a
   * shipped one against this process's configuration, a tenant's own through the
   * privilege layer). null when the revision was not kept or no longer compiles (a deploy
   * removed a provider it used): the caller runs the current one and journals that.
   */
  private async pinnedAgent(
    tenant: string,
    name: string,
    revision: number,
  ): Promise<AgentConfig | null> {
    const entry = this.find(this.snapshot.agents, tenant, name);
    if (entry?.config && entry.row.revision === revision) return entry.config;
    const key = `${tenant}\u0000${name}\u0000${revision}`;
    let compiled = this.revisions.get(key);
    if (!compiled) {
      compiled = this.compileRevision(tenant, name, revision);
      // A few running turns need old revisions at once; forget the oldest beyond that.
      if (this.revisions.size >= 256) {
        const oldest = this.revisions.keys().next().value;
        if (oldest !== undefined) this.revisions.delete(oldest);
      }
      this.revisions.set(key, compiled);
      // Only what compiled is kept: a failed read is tried again by the next step.
      void compiled.then((agent) => {
        if (agent === null) this.revisions.delete(key);
      });
    }
    return compiled;
  }

  private async compileRevision(
    tenant: string,
    name: string,
    revision: number,
  ): Promise<AgentConfig | null> {
    const { config } = this.deps;
    try {
      const kept = await readDefinitionRevision(this.deps.db, {
        kind: 'agent',
        tenant,
        name,
        revision,
      });
      if (!kept) return null;
      return kept.tenant === ''
        ? compileAgent(name, agentSchema.parse(kept.definition), {
            providers: config.providers,
            mcpServers: config.mcpServers,
            voices: config.voices,
          })
        : this.compileTenantAgent(kept.tenant, name, kept.definition).agent;
    } catch (error) {
      this.deps.log.warn(
        { tenant, agent: name, revision, err: (error as Error).message },
        'a kept agent revision does not load or compile',
      );
      return null;
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
      revision: row.revision,
      shipped_content_hash: row.shipped_content_hash,
      shipped_changed:
        row.is_customized && shipped !== null && shipped.content_hash !== row.shipped_content_hash,
      refused: this.refusalOf(kind, tenant, name),
      updated_at: row.updated_at.toISOString(),
      updated_by: row.updated_by,
    };
  }

  /** The stored definition (file shape) a tenant sees, for admins. */
  definition(kind: DefinitionKind, tenant: string, name: string): Record<string, unknown> | null {
    return this.rowOf(kind, tenant, name)?.definition ?? null;
  }

  private rowOf(kind: DefinitionKind, tenant: string, name: string): DefinitionRow | null {
    return this.entryOf(kind, tenant, name)?.row ?? null;
  }

  private refusalOf(kind: DefinitionKind, tenant: string, name: string): string | null {
    return this.entryOf(kind, tenant, name)?.refused ?? null;
  }

  private entryOf(kind: DefinitionKind, tenant: string, name: string) {
    return kind === 'agent'
      ? this.find(this.snapshot.agents, tenant, name)
      : this.find(this.snapshot.missions, tenant, name);
  }

  /**
   * Checks a tenant's agent definition (a PUT: always a tenant's edit, the operator edits
   * the file) with the tenant's schema (config/tenancy.ts), then as start-up checks the
   * file (providers, tools, skills, the provider's environment variables, the shell's
   * sandbox).
   * Returns it with defaults applied; throws an OperatorOnlyKeyError (403) or a
   * ConfigError (400) naming the key.
   */
  checkAgent(tenant: string, name: string, raw: unknown): Record<string, unknown> {
    const { agent, parsed } = this.compileTenantAgent(tenant, name, raw);
    checkAgentCredentials(agent, this.deps.config.providers, this.deps.env);
    return parsed;
  }

  /** The same for a mission, against the agents this tenant has. */
  checkMission(tenant: string, name: string, raw: unknown): Record<string, unknown> {
    return this.compileTenantMission(tenant, name, raw).parsed;
  }

  /** What compiling a tenant's definition needs of this directory (tenantDefinitions.ts). */
  private tenantDeps(): TenantCompileDeps {
    return {
      config: this.deps.config,
      sandboxProblem: this.sandboxProblem,
      hasAgent: (tenant, agent) => this.agents.get(tenant, agent) !== undefined,
      ...(this.deps.skills ? { skills: this.deps.skills } : {}),
    };
  }

  private compileTenantAgent(tenant: string, name: string, raw: unknown) {
    return compileTenantAgent(this.tenantDeps(), tenant, name, raw);
  }

  private compileTenantMission(tenant: string, name: string, raw: unknown) {
    return compileTenantMission(this.tenantDeps(), tenant, name, raw);
  }

  private missionContext(tenant: string) {
    return missionContext(this.tenantDeps(), tenant);
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
    const put = <T>(map: Map<string, Map<string, Compiled<T>>>, entry: Compiled<T>) => {
      let tenant = map.get(entry.row.tenant);
      if (!tenant) map.set(entry.row.tenant, (tenant = new Map()));
      tenant.set(entry.row.name, entry);
    };
    const { config } = this.deps;
    for (const row of rows.filter((candidate) => candidate.kind === 'agent')) {
      const compiled = this.compile(row, () =>
        row.tenant === ''
          ? compileAgent(row.name, agentSchema.parse(row.definition), {
              providers: config.providers,
              mcpServers: config.mcpServers,
              voices: config.voices,
            })
          : this.compileTenantAgent(row.tenant, row.name, row.definition).agent,
      );
      if (compiled) put(next.agents, compiled);
      if (compiled?.config) this.reportUnsandboxed(compiled.config);
    }
    this.snapshot = { agents: next.agents, missions: this.snapshot.missions };
    for (const row of rows.filter((candidate) => candidate.kind === 'mission')) {
      const compiled = this.compile(row, () =>
        row.tenant === ''
          ? compileMission(
              row.name,
              missionSchema.parse(row.definition),
              this.missionContext(row.tenant),
            )
          : this.compileTenantMission(row.tenant, row.name, row.definition).mission,
      );
      if (compiled) put(next.missions, compiled);
    }
    this.snapshot = next;
    this.version = version;
  }

  /**
   * A tenant's stored definition passes the privilege layer and the compiler again at every
   * load: one that no longer does (the operator tightened the policy, removed a grant or a
   * provider, or this machine has no bubblewrap) is *refused* — kept, so its admin sees why
   * (`refused`), but never used: not with the forbidden setting, and not silently replaced
   * by the shipped one. Turns of a refused agent end with `agent_refused`. Reported once at
   * error level. A shipped definition that does not compile is left out (start-up checked
   * the file; this is a configuration of another process).
   */
  private compile<T>(row: DefinitionRow, work: () => T): Compiled<T> | null {
    try {
      return { config: work(), row, refused: null };
    } catch (error) {
      const message = (error as Error).message;
      const key = `${row.kind}:${row.tenant}:${row.name}:${row.content_hash}`;
      if (!this.warned.has(key)) {
        this.warned.add(key);
        this.deps.log.error(
          { kind: row.kind, tenant: row.tenant, name: row.name, err: message },
          'a stored definition does not pass the checks; it is refused',
        );
      }
      return row.tenant === '' ? null : { config: null, row, refused: message };
    }
  }

  /** Start-up says which agents run a shell unsandboxed; a tenant's definitions too. */
  private reportUnsandboxed(agent: AgentConfig): void {
    if (agent.owner === null) return;
    const shell = agent.tools.shell;
    if (!shell || shell.policy === 'deny') return;
    if ((shell.options as { sandbox?: string }).sandbox !== 'none') return;
    const key = `unsandboxed:${agent.owner}:${agent.name}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.deps.log.warn(
      { tenant: agent.owner, agent: agent.name },
      'shell: NO sandbox (sandbox: none, as the operator set it for this agent)',
    );
  }
}

function configs<T>(entries: Compiled<T>[]): T[] {
  return entries.flatMap((entry) => (entry.config === null ? [] : [entry.config]));
}

/** A definition's namespace (every schema defaults it). */
export function namespaceOf(definition: Record<string, unknown>): string {
  return typeof definition.namespace === 'string' ? definition.namespace : 'default';
}
