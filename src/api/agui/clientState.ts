import type { Principal } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import type { Queryable } from '../../store/db.js';
import { takeClientState } from '../../store/takeClientState.js';
import { agentsOf, type ApiDeps } from '../deps.js';
import { storableJson } from '../validate.js';

/** A client's state to take: its data, and the agent's `initial` it is compared with. */
export interface TakenState {
  data: Record<string, unknown>;
  initial: Record<string, unknown>;
}

/**
 * AG-UI's `RunAgentInput.state` (docs/protocols.md, "AG-UI"), checked before anything is
 * written: absent, `null` or `{}` is no opinion (clients send `{}` by default; it never
 * clears the session's state) and gives null. Anything else must be an object the agent's
 * state schema accepts, and the agent must keep state, else `400 invalid_request` naming
 * `state`.
 */
export function checkClientState(
  deps: ApiDeps,
  principal: Principal,
  agent: string,
  state: unknown,
): TakenState | null {
  if (state === undefined || state === null) return null;
  if (typeof state !== 'object' || Array.isArray(state)) {
    throw invalid('state: must be an object');
  }
  const data = state as Record<string, unknown>;
  if (Object.keys(data).length === 0) return null;
  const config = agentsOf(deps).get(principal.tenant, agent)?.state ?? null;
  if (config === null) throw invalid('state: this agent keeps no state');
  if (!storableJson(data)) throw invalid('state: must not contain NUL characters');
  const refused = config.validate(data);
  if (refused !== null) throw invalid(`state: ${refused}`);
  return { data, initial: config.initial };
}

/**
 * The admission's guard that takes a checked client state as the session's: it runs in
 * the admission's transaction, so the state and the turn are written together or not at
 * all, and a retried run (its turn already there) takes nothing again. While a turn is in
 * flight the state is refused (`409 session_busy`): that turn's commit would write over it.
 */
export function clientStateGuard(
  principal: Principal,
  sessionId: string,
  turnId: string,
  state: TakenState,
): (tx: Queryable) => Promise<void> {
  const { tenant, user } = principal;
  return async (tx) => {
    const taken = await takeClientState(tx, { tenant, user, sessionId, turnId, ...state });
    if (taken === 'busy') {
      throw new ParleyError(
        'session_busy',
        'a turn is in flight in this thread; its state can change after that turn',
        { field: 'state' },
      );
    }
  };
}

function invalid(message: string): ParleyError {
  return new ParleyError('invalid_request', message, { field: 'state' });
}
