import { isDeepStrictEqual } from 'node:util';

/** One JSON Patch operation (RFC 6902), as AG-UI's `STATE_DELTA` carries them. */
export type PatchOperation =
  { op: 'add' | 'replace'; path: string; value: unknown } | { op: 'remove'; path: string };

/**
 * The JSON Patch that turns `from` into `to`: objects are compared member by member
 * (`add`, `remove`, and recursion into members both have); anything else that differs —
 * an array, a value of another type — is replaced whole. Equal documents give `[]`.
 */
export function jsonPatch(from: unknown, to: unknown, path = ''): PatchOperation[] {
  if (isObject(from) && isObject(to)) {
    const operations: PatchOperation[] = [];
    for (const key of Object.keys(from)) {
      if (!Object.hasOwn(to, key))
        operations.push({ op: 'remove', path: `${path}/${escape(key)}` });
    }
    for (const [key, value] of Object.entries(to)) {
      const at = `${path}/${escape(key)}`;
      if (Object.hasOwn(from, key)) operations.push(...jsonPatch(from[key], value, at));
      else operations.push({ op: 'add', path: at, value });
    }
    return operations;
  }
  return isDeepStrictEqual(from, to) ? [] : [{ op: 'replace', path, value: to }];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A member name as a JSON Pointer token (RFC 6901): `~` → `~0`, `/` → `~1`. */
function escape(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}
