import { checkMissionInput } from '../missions/input.js';
import { parseCron } from '../missions/cron.js';
import { compileSchema } from '../tools/validate.js';
import { ConfigError } from './errors.js';
import type { ConfigFile, MissionFile } from './schema.js';
import type { AgentConfig, MissionConfig, ScheduleConfig } from './types.js';

/** What a mission definition is checked against. */
export interface MissionContext {
  /** Whether an agent of that name exists (for the mission's tenant). */
  hasAgent: (name: string) => boolean;
  defaultAgent: string;
  /** `limits.mission_iterations`. */
  maxIterationsCap: number;
}

/**
 * Compiles one mission definition in the file's shape (shipped in the configuration, or
 * edited through the API). Errors name the key as `missions.NAME.key`.
 */
export function compileMission(
  name: string,
  mission: MissionFile,
  context: MissionContext,
): MissionConfig {
  const where = `missions.${name}`;
  const agent = mission.agent ?? context.defaultAgent;
  if (!context.hasAgent(agent)) throw new ConfigError(`${where}.agent: no agent named "${agent}"`);
  if (mission.max_iterations > context.maxIterationsCap) {
    throw new ConfigError(
      `${where}.max_iterations: at most ${context.maxIterationsCap} (limits.mission_iterations)`,
    );
  }
  if (mission.interrupt_to?.startsWith('agent:')) {
    const target = mission.interrupt_to.slice('agent:'.length);
    if (!context.hasAgent(target)) {
      throw new ConfigError(`${where}.interrupt_to: no agent named "${target}"`);
    }
  }
  if (mission.input_schema !== null) {
    try {
      compileSchema(mission.input_schema);
    } catch {
      throw new ConfigError(`${where}.input_schema: not a valid JSON Schema`);
    }
  }
  return {
    name,
    namespace: mission.namespace,
    agent,
    prompt: mission.prompt,
    loopPrompt: mission.loop_prompt,
    maxIterations: mission.max_iterations,
    loopDelaySeconds: mission.loop_delay_seconds,
    inputSchema: mission.input_schema,
    interruptTo: mission.interrupt_to,
    priority: mission.priority,
    timeoutSeconds: mission.timeout_seconds,
    approvalTimeoutMs: mission.approval_timeout_ms,
    onTimeout: mission.on_timeout,
  };
}

export function compileMissions(
  file: ConfigFile,
  agents: Record<string, AgentConfig>,
): Record<string, MissionConfig> {
  const context: MissionContext = {
    hasAgent: (name) => Object.hasOwn(agents, name),
    defaultAgent: agents.default ? 'default' : (Object.keys(agents)[0] as string),
    maxIterationsCap: file.limits.mission_iterations,
  };
  const missions: Record<string, MissionConfig> = {};
  for (const [name, mission] of Object.entries(file.missions)) {
    missions[name] = compileMission(name, mission, context);
  }
  return missions;
}

/** Schedules name a shipped mission; their cron, time zone and input are checked here. */
export function compileSchedules(
  file: ConfigFile,
  missions: Record<string, MissionConfig>,
): Record<string, ScheduleConfig> {
  const schedules: Record<string, ScheduleConfig> = {};
  for (const [name, schedule] of Object.entries(file.schedules)) {
    const where = `schedules.${name}`;
    const mission = Object.hasOwn(missions, schedule.mission) ? missions[schedule.mission] : null;
    if (!mission) throw new ConfigError(`${where}.mission: no mission named "${schedule.mission}"`);
    try {
      parseCron(schedule.cron, schedule.timezone);
    } catch (error) {
      const key = (error as Error).message.startsWith('unknown time zone') ? 'timezone' : 'cron';
      throw new ConfigError(`${where}.${key}: ${(error as Error).message}`);
    }
    const problem = checkMissionInput(mission.inputSchema, schedule.input);
    if (problem) throw new ConfigError(`${where}.input: ${problem}`);
    schedules[name] = {
      name,
      tenant: schedule.tenant,
      user: schedule.user,
      mission: schedule.mission,
      cron: schedule.cron,
      timezone: schedule.timezone,
      input: schedule.input,
      overlap: schedule.overlap,
      catchUp: schedule.catch_up,
    };
  }
  return schedules;
}
