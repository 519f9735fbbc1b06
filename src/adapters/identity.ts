import { createHash } from 'node:crypto';
import type { AgentConfig, Principal } from '../config/types.js';
import type { PlatformConfig } from '../config/platformTypes.js';
import { storable } from './text.js';

/**
 * Who a platform user is in Parley: the configured author and roles for a listed user,
 * else `<platform>:<user id>` with the adapter's `default_roles`, in the adapter's tenant.
 * The author is stable (a display name is not): it is the actor of an approval and the
 * owner of memories.
 */
export function principalFor(platform: PlatformConfig, platformUserId: string): Principal {
  const userId = storable(platformUserId);
  const listed = Object.hasOwn(platform.users, userId) ? platform.users[userId] : undefined;
  return {
    tenant: platform.tenant,
    user: listed?.user ?? `${platform.platform}:${userId}`,
    roles: listed?.roles ?? platform.defaultRoles,
    operator: false,
  };
}

/** May this principal answer the agent's input requests (`approver_roles`, PROTOCOL.md §4)? */
export function mayAnswer(agent: AgentConfig, principal: Principal): boolean {
  return (
    agent.approverRoles === null ||
    principal.roles.includes('*') ||
    agent.approverRoles.some((role) => principal.roles.includes(role))
  );
}

/**
 * The `turn_id` of a platform message or button press: the platform identifiers joined
 * with dots (`telegram.4242.78`), at most 128 characters, the same for the same parts (a
 * platform's retry of a message is the same turn). A client's `turn_id` has no dot
 * (`[A-Za-z0-9_-]`), so no API client can take a platform message's id before it arrives,
 * as an execution's `exec.` ids cannot be taken either. Readable where the parts allow; a
 * short hash of the exact parts is appended whenever a character had to be replaced or the
 * id cut, so two ids that differ only in punctuation never meet.
 */
export function platformTurnId(parts: string[]): string {
  return joinedKey(parts, '.');
}

/**
 * The client-shaped key platform turns had before `platformTurnId` (`telegram_4242_78`):
 * still computed to recognise a platform's redelivery of a message admitted under it.
 */
export function clientKey(parts: string[]): string {
  return joinedKey(parts, '_');
}

function joinedKey(parts: string[], separator: '.' | '_'): string {
  // In the legacy form `_` is the separator, so it is replaced inside a part too.
  const kept = separator === '.' ? /[^A-Za-z0-9_-]/g : /[^A-Za-z0-9-]/g;
  const readable = parts.map((part) => part.replace(kept, '_')).join(separator);
  const exact = parts.every((part) => !new RegExp(kept.source).test(part));
  if (exact && readable.length <= 128) return readable;
  const digest = createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 12);
  return `${readable.slice(0, 128 - 13)}${separator}${digest}`;
}
