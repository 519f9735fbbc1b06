import { createHash } from 'node:crypto';

/** What every provider accepts as a tool name. */
export const providerSafeName = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The registry name of an MCP server's tool: `server__tool`, made provider-safe. Characters
 * providers refuse become `_`; a name that had to change, or is too long, gets a short hash
 * of the original so two tools never end up with one name (`a.b` and `a_b`).
 */
export function exposedToolName(server: string, tool: string): string {
  const plain = `${server}__${tool}`;
  if (providerSafeName.test(plain)) return plain;
  const hash = createHash('sha256').update(tool).digest('hex').slice(0, 8);
  const cleaned = tool.replace(/[^a-zA-Z0-9_-]/g, '_');
  const room = 64 - server.length - 2 - hash.length - 1;
  return `${server}__${cleaned.slice(0, Math.max(1, room))}_${hash}`;
}
