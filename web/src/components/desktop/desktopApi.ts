/**
 * The REST calls of the operator's desktop, through the client SDK's transport (its
 * protocol header, bearer key, coded errors and retries of idempotent calls). Each is one
 * route that exists (src/api/*.ts); the shapes the SDK does not export yet are spelled
 * here as the routes' contracts answer them.
 */
import type {
  AgentInfo,
  Checkpoint,
  Execution,
  ExecutionCommandAnswer,
  Mission,
  Page,
  ParleyClient,
  RewindAnswer,
  Schedule,
  SessionProjection,
} from 'parley/client';

export type { Checkpoint, Execution, Mission, Schedule };

export type ExecutionStatus = Execution['status'];

/** An execution that will not change any more. */
export const endedStatuses: readonly ExecutionStatus[] = [
  'success',
  'cancelled',
  'timeout',
  'error',
  'limit_reached',
];

export function hasEnded(status: string): boolean {
  return (endedStatuses as readonly string[]).includes(status);
}

/** GET /api/v1/missions */
export function listMissions(client: ParleyClient): Promise<{ items: Mission[] }> {
  return client.http.request('GET', '/api/v1/missions');
}

/** GET /api/v1/executions (newest first) */
export function listExecutions(
  client: ParleyClient,
  filter: {
    mission?: string;
    status?: string;
    workspaceId?: string | null;
    limit?: number;
  } = {},
): Promise<Page<Execution>> {
  return client.http.request('GET', '/api/v1/executions', {
    query: {
      mission: filter.mission || undefined,
      status: filter.status || undefined,
      workspace_id: filter.workspaceId ?? undefined,
      limit: filter.limit ?? 50,
    },
  });
}

/** GET /api/v1/executions/{id} */
export function getExecution(client: ParleyClient, executionId: string): Promise<Execution> {
  return client.http.request('GET', `/api/v1/executions/${encodeURIComponent(executionId)}`);
}

/**
 * POST /api/v1/missions/{name}/executions. Idempotent by `execution_id`: the caller makes
 * it once per dispatch and a retry sends the same one (the server answers the same 202).
 */
export function dispatchExecution(
  client: ParleyClient,
  mission: string,
  body: {
    execution_id: string;
    input?: Record<string, unknown>;
    agent?: string;
    priority?: string;
  },
): Promise<Execution> {
  return client.http.request('POST', `/api/v1/missions/${encodeURIComponent(mission)}/executions`, {
    body,
    idempotent: true,
  });
}

/** POST /api/v1/executions/{id}/cancel, idempotent by its command_id. */
export function cancelExecution(
  client: ParleyClient,
  executionId: string,
  commandId: string,
): Promise<ExecutionCommandAnswer> {
  return client.http.request(
    'POST',
    `/api/v1/executions/${encodeURIComponent(executionId)}/cancel`,
    { body: { command_id: commandId }, idempotent: true },
  );
}

/** POST /api/v1/executions/{id}/unblock, idempotent by its command_id. */
export function unblockExecution(
  client: ParleyClient,
  executionId: string,
  commandId: string,
  note: string,
): Promise<ExecutionCommandAnswer> {
  const body: Record<string, unknown> = { command_id: commandId };
  if (note.trim()) body.note = note.trim();
  return client.http.request(
    'POST',
    `/api/v1/executions/${encodeURIComponent(executionId)}/unblock`,
    { body, idempotent: true },
  );
}

/** GET /api/v1/schedules */
export function listSchedules(client: ParleyClient): Promise<{ items: Schedule[] }> {
  return client.http.request('GET', '/api/v1/schedules');
}

/** PATCH /api/v1/schedules/{name} (admins): on or off. Idempotent: a retry sets the same. */
export function switchSchedule(
  client: ParleyClient,
  name: string,
  enabled: boolean,
): Promise<Schedule> {
  return client.http.request('PATCH', `/api/v1/schedules/${encodeURIComponent(name)}`, {
    body: { enabled },
    idempotent: true,
  });
}

/** GET /api/v1/agents: the listing carries each agent's revision and origin. */
export function listAgents(client: ParleyClient): Promise<{ items: AgentInfo[] }> {
  return client.http.request('GET', '/api/v1/agents');
}

/** A definition as an admin sees it (GET /api/v1/agents/{name}). */
export interface DefinitionView {
  name: string;
  namespace: string;
  is_customized: boolean;
  content_hash: string | null;
  shipped_content_hash: string | null;
  shipped_changed: boolean;
  updated_at: string;
  updated_by: string | null;
  refused: string | null;
  definition: Record<string, unknown> | null;
}

function agentPath(name: string): string {
  return `/api/v1/agents/${encodeURIComponent(name)}`;
}

export function getAgentDefinition(client: ParleyClient, name: string): Promise<DefinitionView> {
  return client.http.request('GET', agentPath(name));
}

export function putAgentDefinition(
  client: ParleyClient,
  name: string,
  definition: Record<string, unknown>,
): Promise<DefinitionView> {
  return client.http.request('PUT', agentPath(name), { body: definition, idempotent: true });
}

/** DELETE: the shipped definition is restored (its view, `restored: true`). */
export function restoreAgentDefinition(
  client: ParleyClient,
  name: string,
): Promise<(DefinitionView & { restored: true }) | { name: string; deleted: true }> {
  return client.http.request('DELETE', agentPath(name), { idempotent: false });
}

export interface Memory {
  memory_id: string;
  agent: string;
  user: string;
  text: string;
  session_id: string | null;
  created_at: string;
}

/** GET /api/v1/memories (admins may name `user`, `*` for everyone). */
export function listMemories(
  client: ParleyClient,
  filter: { agent?: string; user?: string; q?: string; cursor?: string | null; limit?: number },
): Promise<{ items: Memory[]; next_cursor: string | null }> {
  return client.http.request('GET', '/api/v1/memories', {
    query: {
      q: filter.q || undefined,
      limit: filter.limit ?? 200,
      cursor: filter.cursor ?? undefined,
      agent: filter.agent || undefined,
      user: filter.user || undefined,
    },
  });
}

export function deleteMemory(client: ParleyClient, memoryId: string): Promise<unknown> {
  return client.http.request('DELETE', `/api/v1/memories/${encodeURIComponent(memoryId)}`, {
    idempotent: false,
  });
}

export interface UsageTotals {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens: number;
  cost_usd: number;
}

export interface UsageReport {
  group_by: 'tenant' | 'agent' | 'model' | 'user' | 'day';
  from: string | null;
  to: string | null;
  /** `key`: null for calls of no known user (`user`); a UTC date `YYYY-MM-DD` (`day`). */
  items: (UsageTotals & { key: string | null })[];
  total: UsageTotals;
}

/** GET /api/v1/usage (admins): `from` inclusive, `to` exclusive. */
export function usageReport(
  client: ParleyClient,
  query: { group_by: UsageReport['group_by']; from?: string; to?: string },
): Promise<UsageReport> {
  return client.http.request('GET', '/api/v1/usage', { query });
}

function sessionPath(sessionId: string): string {
  return `/api/v1/chat/sessions/${encodeURIComponent(sessionId)}`;
}

/** GET …/checkpoints, oldest first; `next_cursor` points further on. */
export function listCheckpoints(
  client: ParleyClient,
  sessionId: string,
  cursor: string | null = null,
): Promise<Page<Checkpoint>> {
  return client.http.request('GET', `${sessionPath(sessionId)}/checkpoints`, {
    query: { limit: 200, cursor: cursor ?? undefined },
  });
}

/** POST …/fork: a new session. Not retried: a retry would make a second fork. */
export function forkSession(
  client: ParleyClient,
  sessionId: string,
  atSequence: number,
  title?: string,
): Promise<SessionProjection> {
  const body: Record<string, unknown> = { at_sequence: atSequence };
  if (title) body.title = title;
  return client.http.request('POST', `${sessionPath(sessionId)}/fork`, {
    body,
    idempotent: false,
  });
}

/** POST …/rewind: journals `rewound` (an idle session only). */
export function rewindSession(
  client: ParleyClient,
  sessionId: string,
  toSequence: number,
): Promise<RewindAnswer> {
  return client.http.request('POST', `${sessionPath(sessionId)}/rewind`, {
    body: { to_sequence: toSequence },
    idempotent: false,
  });
}

/**
 * A client-made key (`[A-Za-z0-9_-]`, like the SDK's): made once per action and kept
 * across its retries, so a retried dispatch or command applies once.
 */
export function clientKey(prefix: 'web' | 'cancel' | 'unblock'): string {
  const random = new Uint8Array(10);
  globalThis.crypto.getRandomValues(random);
  const hex = Array.from(random, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${prefix}_${Date.now().toString(36)}${hex}`;
}
