/** Compiled `missions` and `schedules` (docs/missions.md). */

export type Priority = 'low' | 'normal' | 'high' | 'urgent';

/** A mission: an objective an agent executes once, or as a self-evaluating loop. */
export interface MissionConfig {
  name: string;
  namespace: string;
  /** The agent an execution uses unless its dispatch names another. */
  agent: string;
  prompt: string;
  /** Set: a loop mission, evaluated with this prompt after every iteration. */
  loopPrompt: string | null;
  maxIterations: number;
  loopDelaySeconds: number;
  /** JSON Schema of a dispatch's `input` (null: any object). */
  inputSchema: Record<string, unknown> | null;
  /** `user:NAME`, `role:NAME` or `agent:NAME`; null: the execution's own user. */
  interruptTo: string | null;
  priority: Priority;
  timeoutSeconds: number | null;
  /** How long its executions' approvals wait (null: the agent's); a tool entry's wins. */
  approvalTimeoutMs: number | null;
  /** What applies when such an approval's deadline passes (null: a tool entry's, else reject). */
  onTimeout: 'reject' | 'approve' | null;
}

export interface ScheduleConfig {
  name: string;
  tenant: string;
  user: string;
  mission: string;
  cron: string;
  timezone: string;
  input: Record<string, unknown>;
  overlap: 'skip' | 'queue' | 'cancel_previous';
  catchUp: 'none' | 'one' | 'all';
}
