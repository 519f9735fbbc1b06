import { StreamResponse } from '@a2a-js/sdk';
import type { Config } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import type { ClaimedA2aPush } from '../../store/claimA2aPushDeliveries.js';
import type {
  A2aPushComposer,
  A2aPushNotification,
  A2aPushStory,
} from '../../store/enqueueA2aPushes.js';
import { checkUrl } from '../../tools/httpFetch/index.js';
import { hostAllowed } from '../../tools/httpFetch/hosts.js';
import { guardedLookup, systemResolve, type Resolve } from '../../tools/httpFetch/lookup.js';
import type { ToolError } from '../../tools/types.js';
import { TaskFold } from './taskFold.js';
import { streamedInV03 } from './v03.js';

/**
 * A2A push notifications (docs/protocols.md, "A2A"), as the A2A server defines them and the
 * webhook loop delivers them (src/webhooks/a2aPushSender.ts): each state change of a task
 * is one POST of a `StreamResponse` holding a `statusUpdate` (what the SDK's
 * `DefaultPushNotificationSender` sends: `application/a2a+json`, the config's token in
 * `X-A2A-Notification-Token`, its authentication as `Authorization`), to a URL the
 * operator allows (`a2a.push_notifications`).
 */

export type PushSettings = Config['a2a']['pushNotifications'];

/** Push notifications are offered only to hosts the operator listed. */
export function pushEnabled(settings: PushSettings): boolean {
  return settings.allowHosts.length > 0;
}

/** The journal events that can change a task's status (taskFold.ts): all a push needs. */
const statusEventTypes = [
  'turn_started',
  'input_required',
  'input_resolved',
  'done',
  'error',
  'cancelled',
] as const;

/**
 * A task's status updates as notifications, each keyed by the event that made it. A
 * config's first notification sums up what came before it was made (the status then, if
 * the task had left `submitted`); every later change is one notification. Pure: the same
 * story gives the same notifications, so following again after a crash adds none twice.
 */
export const a2aPushComposer: A2aPushComposer = {
  types: statusEventTypes,
  compose(story: A2aPushStory) {
    const fold = new TaskFold({ taskId: story.taskId, contextId: story.sessionId });
    const notifications: A2aPushNotification[] = [];
    let summary: A2aPushNotification | null = null;
    const followed = story.followedSequence ?? story.createdSequence;
    for (const event of story.events) {
      const before = fold.updates.length;
      fold.apply(event);
      const update = fold.updates
        .slice(before)
        .findLast((added) => added.payload?.$case === 'statusUpdate');
      if (update?.payload?.$case !== 'statusUpdate') continue;
      const payload = StreamResponse.toJSON(update) as {
        statusUpdate: { status: { state: string } };
      };
      const notification = {
        sequence: event.sequence,
        eventType: payload.statusUpdate.status.state,
        payload,
      };
      if (event.sequence > followed) notifications.push(notification);
      else if (story.followedSequence === null) summary = notification;
    }
    return {
      notifications: summary ? [summary, ...notifications] : notifications,
      finished: fold.ended,
    };
  },
};

/**
 * How a URL is named in a refusal: its origin (a path or a query may hold the receiver's
 * own secret, and credentials are never repeated).
 */
function named(url: URL): string {
  return url.origin;
}

/**
 * A push config's URL as a client gives it, checked as http_fetch checks a URL
 * (`checkUrl`: http or https, no credentials, an allowed host, no internal address literal
 * unless `allow_private`). A refusal is Invalid params naming the URL; nothing is stored.
 */
export function checkPushUrl(text: string, settings: PushSettings, field: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ParleyError('invalid_request', `${field}: not a URL`, { field });
  }
  const refuse = (why: string) =>
    new ParleyError('invalid_request', `${field}: ${named(url)} ${why}; nothing was stored`, {
      field,
    });
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refuse('is not an http or https URL');
  }
  if (!hostAllowed(settings.allowHosts, url)) {
    throw refuse(`is not on a2a.push_notifications.allow_hosts (${url.host})`);
  }
  try {
    checkUrl(url, settings, false);
  } catch {
    throw refuse(
      url.username || url.password
        ? 'carries credentials (give them as authentication)'
        : 'is an internal address (a2a.push_notifications.allow_private is off)',
    );
  }
  return url;
}

/**
 * A notification's body in its config's A2A version: 1.0's `StreamResponse` as stored, or
 * for a config made by a 0.3 client the status-update event itself, as the SDK's 0.3
 * serializer sends it (`kind`, lower-case state, `final` once the task has ended).
 */
export function pushBody(push: ClaimedA2aPush): string {
  if (push.wire === '0.3') {
    return JSON.stringify(streamedInV03(StreamResponse.fromJSON(push.payload), false));
  }
  return JSON.stringify(push.payload);
}

/** The headers of a notification: the SDK's, plus the delivery id a retry repeats. */
export function pushHeaders(push: ClaimedA2aPush): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': push.wire === '0.3' ? 'application/json' : 'application/a2a+json',
    'user-agent': 'Parley-A2A-Push',
    'webhook-id': push.delivery_id,
  };
  if (push.auth_scheme && push.auth_credentials) {
    headers.authorization = `${push.auth_scheme} ${push.auth_credentials}`;
  }
  if (push.token) headers['x-a2a-notification-token'] = push.token;
  return headers;
}

/**
 * POSTs a notification as http_fetch connects: the URL checked again (the operator's list
 * may have changed), every address the name resolves to checked at connect time (DNS may
 * now point inward), no redirect followed (a 3xx is a failure). Resolves to the status;
 * a refusal names the host only.
 */
export function pushPoster(
  settings: PushSettings,
  resolve: Resolve = systemResolve,
): (push: ClaimedA2aPush, signal: AbortSignal) => Promise<number> {
  return async (push, signal) => {
    const url = new URL(push.url);
    if (!hostAllowed(settings.allowHosts, url)) {
      throw new Error(`${url.host} is no longer on a2a.push_notifications.allow_hosts`);
    }
    try {
      checkUrl(url, settings, false);
    } catch {
      throw new Error(`${url.host} is not allowed (an internal address, or credentials)`);
    }
    const failures: ToolError[] = [];
    // Loaded on the first push rather than at every process's start.
    const { Agent, request } = await import('undici');
    const dispatcher = new Agent({
      connect: { lookup: guardedLookup(resolve, settings.allowPrivate, failures) },
      connections: 1,
      pipelining: 0,
    });
    try {
      const response = await request(url, {
        method: 'POST',
        dispatcher,
        signal,
        headers: pushHeaders(push),
        body: pushBody(push),
      });
      // The body is not read: nothing of the receiver's answer is kept or logged.
      await response.body.dump();
      return response.statusCode;
    } catch (error) {
      if (signal.aborted) throw error;
      if (failures[0]) {
        throw new Error(
          failures[0].code === 'not_allowed'
            ? `${url.hostname} resolves to an internal address (a2a.push_notifications.allow_private is off)`
            : `${url.hostname} could not be resolved`,
        );
      }
      throw new Error(`${url.host} could not be reached`);
    } finally {
      void dispatcher.destroy().catch(() => undefined);
    }
  };
}
