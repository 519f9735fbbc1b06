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

/** Does this principal trigger turns of the agent (`trigger_roles`), as the API decides it. */
export function triggers(agent: AgentConfig, principal: Principal): boolean {
  return (
    agent.triggerRoles === null ||
    principal.roles.includes('*') ||
    principal.roles.some((role) => agent.triggerRoles?.includes(role))
  );
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
 * A client key (`turn_id`) from platform identifiers: `[A-Za-z0-9_-]`, at most 128
 * characters, the same for the same parts (a platform's retry of a message is the same
 * turn). Readable where the parts allow; a short hash of the exact parts is appended
 * whenever a character had to be replaced or the key cut, so two ids that differ only
 * in punctuation never meet.
 */
export function clientKey(parts: string[]): string {
  const readable = parts.map((part) => part.replace(/[^A-Za-z0-9-]/g, '_')).join('_');
  const exact = parts.every((part) => /^[A-Za-z0-9-]*$/.test(part));
  if (exact && readable.length <= 128) return readable;
  const digest = createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 12);
  return `${readable.slice(0, 128 - 13)}_${digest}`;
}
