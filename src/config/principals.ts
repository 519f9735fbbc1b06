import type { Principal } from './types.js';

/** Whether a principal has a role (`*` has every role). */
export function hasRole(principal: Principal, role: string): boolean {
  return principal.roles.includes('*') || principal.roles.includes(role);
}

/** Whether a route (`user:NAME` or `role:NAME`) names this principal. */
export function isAddressed(principal: Principal, route: string): boolean {
  if (route.startsWith('user:')) return principal.user === route.slice('user:'.length);
  if (route.startsWith('role:')) return hasRole(principal, route.slice('role:'.length));
  return false;
}
