import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { preferences, type Preferences } from '../protocol/rest.js';
import { findVisibleSession } from '../store/findVisibleSession.js';
import { readUserPreferences, saveUserPreferences } from '../store/users.js';
import { findMemberWorkspace } from '../store/workspaces.js';
import { route, routeOptions, typed } from './contract.js';
import { agentsOf, speechOf, type ApiDeps } from './deps.js';
import { viewerOf } from './sessionAccess.js';
import { storableJson, text } from './validate.js';
import { requireMemberWorkspace } from './workspaces.js';

/** The largest `desktop` layout a user may keep, in bytes of JSON. */
export const maxDesktopBytes = 64 * 1024;

/** A language tag as BCP 47 has it (`de-CH`, `pt-BR`, `en`), stored in its canonical form. */
export function canonicalLanguage(tag: string): string | null {
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? null;
  } catch {
    return null;
  }
}

/** An IANA time zone name (`Europe/Berlin`, `UTC`) the runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return /^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(zone);
  } catch {
    return false;
  }
}

const language = text()
  .max(35)
  .refine((tag) => canonicalLanguage(tag) !== null, 'must be a BCP 47 language tag, e.g. "de-CH"');
const timezone = text()
  .max(64)
  .refine(isTimeZone, 'must be an IANA time zone, e.g. "Europe/Berlin"');
const desktop = z
  .record(z.string(), z.unknown())
  .refine(storableJson, 'must not contain NUL characters or unpaired surrogates')
  .refine(
    (value) => Buffer.byteLength(JSON.stringify(value)) <= maxDesktopBytes,
    `must be at most ${maxDesktopBytes} bytes of JSON`,
  );

const preferencesBody = z
  .object({
    workspace_id: text().min(1).max(128).nullable().optional().meta({
      description: 'the active workspace: one the caller is a member of',
    }),
    active_agent: text().max(128).nullable().optional(),
    active_session_id: text().max(128).nullable().optional(),
    system_voice: text().max(200).nullable().optional().meta({
      description: 'a voice id of the catalog (GET /api/v1/voices)',
    }),
    desktop: desktop.optional(),
    language: language.nullable().optional(),
    timezone: timezone.nullable().optional(),
  })
  .strict();

const defaults: Preferences = {
  workspace_id: null,
  active_agent: null,
  active_session_id: null,
  system_voice: null,
  desktop: {},
  language: null,
  timezone: null,
};

export const preferenceContracts = {
  get: route({
    method: 'GET',
    url: '/api/v1/me/preferences',
    summary: "The caller's preferences (the defaults until first saved)",
    responses: { '200': preferences },
    errors: {},
  }),
  put: route({
    method: 'PUT',
    url: '/api/v1/me/preferences',
    summary: "Replace the caller's preferences (a key left out goes back to its default)",
    body: preferencesBody,
    responses: { '200': preferences },
    errors: {
      '400':
        'invalid_request (a language tag, a time zone, a desktop over 64 KiB, a system_voice not in the catalog…)',
      '404':
        'unknown_agent, session_not_found (also a session the caller may not see), workspace_not_found (also one the caller is not a member of)',
    },
  }),
};

/**
 * A user's preferences (docs/web.md, "Preferences"): what the web app opens on, and the
 * language and time zone the user's agents are told (runtime/userContext.ts). Checked
 * whole on every save — the agent, the session and the workspace must be ones the caller
 * may use now —
 * and stored whole; the user's row is made on the first save.
 */
export function preferenceRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  api.get(preferenceContracts.get.url, routeOptions(preferenceContracts.get), async (request) => {
    const { tenant, user } = request.principal;
    const saved = { ...defaults, ...(await readUserPreferences(deps.db, tenant, user)) };
    // A session deleted, or no longer shared with the caller, is no longer the active one.
    if (
      saved.active_session_id !== null &&
      !(await visibleSession(deps, request.principal, saved.active_session_id))
    ) {
      saved.active_session_id = null;
    }
    // Likewise a workspace deleted, or the caller no longer a member of it.
    if (
      saved.workspace_id !== null &&
      !(await findMemberWorkspace(deps.db, request.principal, saved.workspace_id))
    ) {
      saved.workspace_id = null;
    }
    // A voice the catalog no longer has is no longer the user's.
    if (saved.system_voice !== null && !speechOf(deps).voice(saved.system_voice)) {
      saved.system_voice = null;
    }
    return saved;
  });

  api.put(preferenceContracts.put.url, routeOptions(preferenceContracts.put), async (request) => {
    const principal = request.principal;
    const body = request.body;
    const next: Preferences = {
      ...defaults,
      ...body,
      language: body.language ? canonicalLanguage(body.language) : null,
    };
    if (next.active_agent !== null && !agentsOf(deps).get(principal.tenant, next.active_agent)) {
      throw new ParleyError('unknown_agent', 'active_agent: no such agent', {
        field: 'active_agent',
      });
    }
    if (
      next.active_session_id !== null &&
      !(await visibleSession(deps, principal, next.active_session_id))
    ) {
      throw new ParleyError('session_not_found', 'active_session_id: no such session', {
        field: 'active_session_id',
      });
    }
    if (next.workspace_id !== null) {
      await requireMemberWorkspace(deps.db, principal, next.workspace_id, 'workspace_id');
    }
    if (next.system_voice !== null && !speechOf(deps).voice(next.system_voice)) {
      throw new ParleyError('invalid_request', 'system_voice: no such voice (GET /api/v1/voices)', {
        field: 'system_voice',
      });
    }
    await saveUserPreferences(deps.db, principal.tenant, principal.user, next);
    return next;
  });
}

async function visibleSession(deps: ApiDeps, principal: Principal, sessionId: string) {
  return findVisibleSession(deps.db, principal.tenant, sessionId, viewerOf(deps, principal));
}
