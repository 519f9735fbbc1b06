import type { MissionConfig, Priority, Visibility } from '../config/types.js';
import type { DispatchInput } from '../store/createExecution.js';
import { renderMissionPrompt } from './input.js';

export const priorities: Record<Priority, number> = { low: 0, normal: 1, high: 2, urgent: 3 };

/**
 * What an execution of `mission` is dispatched with, from an API request or a schedule's
 * fire: the prompts rendered from the input, the mission's loop settings snapshotted (an
 * edit of the mission applies to later executions only) with the revision they were
 * taken from, routing and limits.
 */
export function dispatchOf(
  mission: MissionConfig,
  request: {
    tenant: string;
    executionId: string;
    user: string;
    agent: string;
    input: Record<string, unknown>;
    threads: { agent: string; input: Record<string, unknown> }[] | null;
    priority: Priority | null;
    timeoutSeconds: number | null;
    /** The revision of `mission` (MissionLookup.revision), recorded on the execution. */
    missionRevision?: number | null;
  },
  /** Each agent's `visibility`: its sessions' (unknown agents: `tenant`). */
  visibilityOf: (agent: string) => Visibility,
): DispatchInput {
  return {
    tenant: request.tenant,
    executionId: request.executionId,
    user: request.user,
    mission: mission.name,
    missionRevision: request.missionRevision ?? null,
    agent: request.agent,
    visibility: visibilityOf(request.agent),
    input: request.input,
    spec: {
      prompt: renderMissionPrompt(mission.prompt, request.input),
      loop_prompt: mission.loopPrompt,
      loop_delay_seconds: mission.loopDelaySeconds,
      approval_timeout_ms: mission.approvalTimeoutMs,
      on_timeout: mission.onTimeout,
    },
    threads:
      request.threads?.map((thread) => ({
        ...thread,
        visibility: visibilityOf(thread.agent),
        prompt: renderMissionPrompt(mission.prompt, thread.input),
      })) ?? null,
    maxIterations: mission.loopPrompt === null ? 1 : mission.maxIterations,
    interruptTo: mission.interruptTo,
    priority: priorities[request.priority ?? mission.priority],
    timeoutSeconds: request.timeoutSeconds ?? mission.timeoutSeconds,
  };
}
