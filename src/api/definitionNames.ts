import { missionName } from '../config/schema.js';
import { ParleyError } from '../errors.js';
import type { DefinitionKind } from '../store/definitions.js';
import { pathId } from './validate.js';

/** The 404 of a definition the tenant does not have (another tenant's is the same). */
export const notFound = {
  agent: (name: string) => new ParleyError('unknown_agent', `no agent named "${name}"`),
  mission: (name: string) => new ParleyError('mission_not_found', `no mission named "${name}"`),
};

/** A definition's name from the path: 400 before any query when it cannot be one. */
export function nameOf(kind: DefinitionKind, raw: string): string {
  const name = pathId(raw, 'name');
  if (kind === 'mission' && !missionName.safeParse(name).success) {
    throw new ParleyError('invalid_request', 'name: letters, digits, _ and - (at most 64)', {
      field: 'name',
    });
  }
  return name;
}
