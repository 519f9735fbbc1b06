import { ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig } from '@a2a-js/sdk';
import { z } from 'zod';
import type { Principal } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import { newSessionId } from '../../ids.js';
import type { Db } from '../../store/db.js';
import { deleteA2aPushConfig } from '../../store/deleteA2aPushConfig.js';
import { findA2aPushConfigs } from '../../store/findA2aPushConfigs.js';
import {
  saveA2aPushConfig,
  type A2aPushConfigRow,
  type A2aWire,
} from '../../store/saveA2aPushConfig.js';
import { paramsOf } from './jsonRpc.js';
import { turnIdOfMessage, type SendParams } from './params.js';
import { checkPushUrl, pushEnabled, type PushSettings } from './pushNotifications.js';
import type { TaskIdentity } from './taskFold.js';

/**
 * A2A's push config methods (docs/protocols.md, "A2A"): a task's push configs are its
 * caller's own — another user who may see the task neither sees nor replaces them — keyed
 * by the config's `id` (the task's id when the client gives none). The URL is checked
 * before anything is written; the token and authentication are kept as given and shown
 * only to their owner, never in an error or a log.
 */

/** The configs one user may keep on one task: each is a POST per state change. */
export const maxConfigsPerTask = 10;

const authentication = z
  .object({
    scheme: z.string().max(100).optional(),
    credentials: z.string().max(4000).optional(),
  })
  .loose();

/** A `TaskPushNotificationConfig` as a message's configuration carries it (no task yet). */
export const givenPushConfig = z
  .object({
    tenant: z.string().max(128).optional(),
    id: z.string().max(200).optional(),
    taskId: z.string().max(200).optional(),
    url: z.string().min(1).max(2000),
    token: z.string().max(1000).optional(),
    authentication: authentication.optional(),
  })
  .loose();

const createParams = givenPushConfig.extend({ taskId: z.string().min(1).max(200) });

const configParams = z
  .object({
    tenant: z.string().max(128).optional(),
    taskId: z.string().min(1).max(200),
    id: z.string().max(200).optional(),
  })
  .loose();

const listParams = z
  .object({
    tenant: z.string().max(128).optional(),
    taskId: z.string().min(1).max(200),
    pageSize: z.number().int().min(0).max(100).optional(),
    pageToken: z.string().max(500).optional(),
  })
  .loose();

export type GivenPushConfig = z.output<typeof givenPushConfig>;

export const pushMethods = [
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
] as const;
export type PushMethod = (typeof pushMethods)[number];

export interface PushConfigDeps {
  db: Db;
  settings: PushSettings;
  /** A task the principal may see, of this agent (else `turn_not_found`). */
  taskOf: (taskId: string) => Promise<{ identity: TaskIdentity; from: number }>;
  /** The A2A version of the call: a config's notifications go out in its shape. */
  wire: A2aWire;
}

/** Refuses push config methods and configurations while the operator offers none. */
export function requirePush(settings: PushSettings): void {
  if (!pushEnabled(settings)) {
    throw new ParleyError(
      'push_notification_not_supported',
      'push notifications are not offered by this server',
    );
  }
}

/**
 * A send's `configuration.taskPushNotificationConfig`, checked (its URL, the user's room
 * on the task) before the message is taken, so a refused one admits nothing. The returned
 * function stores it on the task the message reached: from the task's start for a task it
 * admitted, from now for one it answered. Null: the send gives none.
 */
export async function sendPushConfig(
  db: Db,
  settings: PushSettings,
  send: { principal: Principal; agent: string; params: SendParams; wire: A2aWire },
): Promise<((sent: SentTask) => Promise<void>) | null> {
  const given = send.params.configuration?.taskPushNotificationConfig;
  if (given === undefined) return null;
  requirePush(settings);
  const field = 'params.configuration.taskPushNotificationConfig';
  const config = paramsOf(givenPushConfig, given);
  checkPushUrl(config.url, settings, `${field}.url`);
  const { message } = send.params;
  const taskId =
    message.taskId || turnIdOfMessage(send.principal.user, send.agent, message.messageId);
  await checkRoom(db, send.principal, taskId, config.id || taskId);
  return async (sent) => {
    await savePushConfig(db, send.principal, sent, config, {
      createdSequence: sent.admitted ? sent.from : null,
      wire: send.wire,
    });
  };
}

/** Where a send went: its task, where the task's story starts, and whether it admitted it. */
interface SentTask {
  identity: TaskIdentity;
  from: number;
  admitted: boolean;
}

/**
 * Stores a checked config on a task: `createdSequence` is where its notifications start
 * (the task's start for a config given with the message that admitted the task; null:
 * now, the first notification then being the task's status as it stands); `wire` the A2A
 * version they are sent in.
 */
export async function savePushConfig(
  db: Db,
  principal: Principal,
  task: { identity: TaskIdentity; from: number },
  config: GivenPushConfig,
  made: { createdSequence: number | null; wire: A2aWire },
): Promise<A2aPushConfigRow> {
  const configId = config.id || task.identity.taskId;
  await checkRoom(db, principal, task.identity.taskId, configId);
  const scheme = config.authentication?.scheme || null;
  const credentials = config.authentication?.credentials || null;
  return saveA2aPushConfig(db, {
    pushId: `push_${newSessionId()}`,
    tenant: principal.tenant,
    taskId: task.identity.taskId,
    owner: principal.user,
    configId,
    sessionId: task.identity.contextId,
    url: config.url,
    token: config.token || null,
    authScheme: scheme,
    authCredentials: credentials,
    fromSequence: task.from,
    createdSequence: made.createdSequence,
    wire: made.wire,
  });
}

/**
 * Refuses an 11th config of a user on a task (a new id; replacing one is fine): checked
 * before a message that brings a config is taken, and again when the config is stored.
 */
export async function checkRoom(
  db: Db,
  principal: Principal,
  taskId: string,
  configId: string,
): Promise<void> {
  const existing = await findA2aPushConfigs(db, {
    tenant: principal.tenant,
    taskId,
    owner: principal.user,
  });
  if (existing.length >= maxConfigsPerTask && !existing.some((row) => row.config_id === configId)) {
    throw new ParleyError(
      'invalid_request',
      `at most ${maxConfigsPerTask} push notification configs per task`,
      { field: 'params.id' },
    );
  }
}

/** A stored config as A2A's `TaskPushNotificationConfig`, for its owner. */
function pushConfigOf(row: A2aPushConfigRow): TaskPushNotificationConfig {
  return {
    tenant: '',
    id: row.config_id,
    taskId: row.task_id,
    url: row.url,
    token: row.token ?? '',
    authentication:
      row.auth_scheme === null && row.auth_credentials === null
        ? undefined
        : { scheme: row.auth_scheme ?? '', credentials: row.auth_credentials ?? '' },
  };
}

/** One of the four push config methods: its JSON-RPC result. */
export async function pushConfigMethod(
  deps: PushConfigDeps,
  principal: Principal,
  method: PushMethod,
  params: unknown,
): Promise<unknown> {
  requirePush(deps.settings);
  const owned = { tenant: principal.tenant, owner: principal.user };
  switch (method) {
    case 'CreateTaskPushNotificationConfig': {
      const given = paramsOf(createParams, params);
      checkPushUrl(given.url, deps.settings, 'params.url');
      const task = await deps.taskOf(given.taskId);
      const saved = await savePushConfig(deps.db, principal, task, given, {
        createdSequence: null,
        wire: deps.wire,
      });
      return TaskPushNotificationConfig.toJSON(pushConfigOf(saved));
    }
    case 'GetTaskPushNotificationConfig': {
      const asked = paramsOf(configParams, params);
      await deps.taskOf(asked.taskId);
      const configId = asked.id || asked.taskId;
      const [found] = await findA2aPushConfigs(deps.db, {
        ...owned,
        taskId: asked.taskId,
        configId,
      });
      if (!found) throw notFound(configId);
      return TaskPushNotificationConfig.toJSON(pushConfigOf(found));
    }
    case 'ListTaskPushNotificationConfigs': {
      const asked = paramsOf(listParams, params);
      await deps.taskOf(asked.taskId);
      const found = await findA2aPushConfigs(deps.db, { ...owned, taskId: asked.taskId });
      // At most `maxConfigsPerTask`: one page holds them all.
      return ListTaskPushNotificationConfigsResponse.toJSON({
        configs: found.map(pushConfigOf),
        nextPageToken: '',
      });
    }
    case 'DeleteTaskPushNotificationConfig': {
      const asked = paramsOf(configParams, params);
      await deps.taskOf(asked.taskId);
      const configId = asked.id || asked.taskId;
      const deleted = await deleteA2aPushConfig(deps.db, {
        ...owned,
        taskId: asked.taskId,
        configId,
      });
      if (!deleted) throw notFound(configId);
      return null;
    }
  }
}

function notFound(configId: string): ParleyError {
  return new ParleyError(
    'turn_not_found',
    `no push notification config "${configId}" on this task`,
  );
}
