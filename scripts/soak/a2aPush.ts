import { StreamResponse, TaskState } from '@a2a-js/sdk';
import { HookReceiver, type Answered } from './webhooks.js';
import type { Random } from './random.js';

/** What the push receiver records of a notification: its token and the task's status. */
export interface PushNotice {
  /** The `X-A2A-Notification-Token` header: the config's token, which names the client's task. */
  token: string;
  taskId: string;
  /** The status's state (`TaskState` name), and the text of its message (a reply, on completion). */
  state: string;
  text: string;
}

export type PushReceipt = PushNotice & Answered;

/** The receiver of the A2A clients' push notifications (docs/protocols.md, "A2A"). */
export class PushReceiver extends HookReceiver<PushNotice> {
  constructor(random: Random) {
    super(random, '/push', (body, headers) => {
      try {
        const update = StreamResponse.fromJSON(JSON.parse(body));
        if (update.payload?.$case !== 'statusUpdate') return null;
        const { taskId, status } = update.payload.value;
        return {
          token: String(headers['x-a2a-notification-token'] ?? ''),
          taskId,
          state: TaskState[status?.state ?? TaskState.TASK_STATE_UNSPECIFIED],
          text: (status?.message?.parts ?? [])
            .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
            .join(''),
        };
      } catch {
        return null;
      }
    });
  }
}

/**
 * Push notifications on, for the receiver's host and port only (loopback, so
 * `allow_private`), with the webhooks' quick retries: only a receiver that stays down
 * could dead-letter one.
 */
export function pushConfig(receiverUrl: string): Record<string, unknown> {
  return {
    push_notifications: {
      allow_hosts: [new URL(receiverUrl).host],
      allow_private: true,
      timeout_ms: 5_000,
      max_attempts: 50,
      retry_base_ms: 100,
    },
  };
}
