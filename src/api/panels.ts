import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../config/types.js';
import { ParleyError } from '../errors.js';
import { clientKeyPattern, newPanelId } from '../ids.js';
import { newEvent } from '../protocol/events.js';
import {
  checkPanelDocument,
  formsOf,
  palette,
  panelScope,
  panelView as panel,
  type PanelComponent,
  type PanelForm,
} from '../protocol/panels.js';
import { journalEvents } from '../store/appendEvents.js';
import { defaultPanelChannel } from '../store/applyPanelEffects.js';
import { findVisibleSession } from '../store/findVisibleSession.js';
import { decodeCursor } from '../store/listSessions.js';
import {
  deletePanel,
  insertPanel,
  listPanels,
  lockPanel,
  readPanel,
  updatePanel,
  type Panel,
  type PanelFilter,
} from '../store/panels.js';
import { findMemberWorkspace } from '../store/workspaces.js';
import { admission } from '../protocol/rest.js';
import { route, routeOptions, typed } from './contract.js';
import type { ApiDeps } from './deps.js';
import { hasRole } from './principal.js';
import { viewerOf } from './sessionAccess.js';
import { admitForPrincipal } from './turns.js';
import { pathId, text } from './validate.js';

const scope = panelScope;
const title = text().min(1).max(200);
const channel = text().min(1).max(100);

const listQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: text().max(500).optional(),
    scope: scope.optional(),
    session_id: text().min(1).max(128).optional(),
    workspace_id: text().min(1).max(128).optional(),
  })
  .strict();

const createBody = z
  .object({
    title,
    scope,
    session_id: text().min(1).max(128).optional(),
    workspace_id: text().min(1).max(128).optional(),
    channel: channel.optional(),
    document: z.unknown(),
  })
  .strict();

const replaceBody = z
  .object({ title, channel: channel.optional(), document: z.unknown() })
  .strict();

const submitBody = z
  .object({
    turn_id: z.string().regex(clientKeyPattern, 'must be 1-128 characters of A-Z a-z 0-9 _ -'),
    form: text().min(1).max(64),
    values: z.record(
      z.string(),
      z.union([z.string().max(10_000), z.number(), z.boolean(), z.null()]),
    ),
  })
  .strict();

export const panelContracts = {
  palette: route({
    method: 'GET',
    url: '/api/v1/panels/palette',
    summary: 'Every component a panel document may use, with its JSON Schema',
    responses: {
      '200': z.object({
        components: z.array(
          z.object({ type: z.string(), description: z.string(), schema: z.unknown() }),
        ),
      }),
    },
    errors: {},
  }),
  list: route({
    method: 'GET',
    url: '/api/v1/panels',
    summary:
      "Panels newest first: a session's (?session_id), a workspace's (?workspace_id), else the caller's own (?scope)",
    querystring: listQuery,
    responses: {
      '200': z.object({ items: z.array(panel), next_cursor: z.string().nullable() }),
    },
    errors: {
      '400': 'invalid_request, invalid_cursor',
      '404': 'session_not_found, workspace_not_found',
    },
  }),
  create: route({
    method: 'POST',
    url: '/api/v1/panels',
    summary: 'Make a panel (a session panel needs session_id)',
    body: createBody,
    responses: { '201': panel },
    errors: {
      '400': 'invalid_request, invalid_panel (naming the path in the document)',
      '404': 'session_not_found, workspace_not_found',
    },
  }),
  get: route({
    method: 'GET',
    url: '/api/v1/panels/:panelId',
    summary: 'One panel',
    responses: { '200': panel },
    errors: { '404': 'panel_not_found (also a panel the caller may not see)' },
  }),
  replace: route({
    method: 'PUT',
    url: '/api/v1/panels/:panelId',
    summary: "Replace a panel's title, channel and document (its owner, or an admin)",
    body: replaceBody,
    responses: { '200': panel },
    errors: {
      '400': 'invalid_request, invalid_panel',
      '403': 'forbidden (another user may see the panel but not change it)',
      '404': 'panel_not_found',
    },
  }),
  delete: route({
    method: 'DELETE',
    url: '/api/v1/panels/:panelId',
    summary: 'Delete a panel (its owner, or an admin)',
    responses: { '204': { description: 'deleted' } },
    errors: { '403': 'forbidden', '404': 'panel_not_found' },
  }),
  submit: route({
    method: 'POST',
    url: '/api/v1/panels/:panelId/submit',
    summary: "Submit a form of the panel: a turn in the panel's conversation (202 once durable)",
    body: submitBody,
    responses: { '202': admission },
    errors: {
      '400': 'invalid_request, invalid_form (a field not in the form, a required one missing)',
      '404': 'panel_not_found, session_not_found (the conversation is gone)',
      '409': 'turn_conflict, session_closed',
    },
  }),
};

/** The document of a request, checked against the palette: `invalid_panel` names the path. */
function checkedDocument(value: unknown): PanelComponent {
  const checked = checkPanelDocument(value);
  if ('issue' in checked) {
    throw new ParleyError('invalid_panel', `${checked.issue.path}: ${checked.issue.message}`, {
      field: checked.issue.path,
    });
  }
  return checked.document;
}

function cursorOf(value: string | undefined): string | null {
  if (value === undefined) return null;
  const parts = decodeCursor(value);
  if (!parts || typeof parts[0] !== 'string') {
    throw new ParleyError('invalid_cursor', 'cursor: not a cursor this server made');
  }
  return parts[0];
}

/**
 * UI panels (docs/web.md, "Panels"): documents of palette components beside a conversation
 * (`session`) or on the desktop (`workspace`), made by people here and by agents with
 * `show_panel`. Who sees a panel: its owner; everyone who may see its session (a session
 * panel); every member of its workspace (a workspace panel). Only the owner, or an admin,
 * changes or deletes it. A panel the caller may not see answers 404 like a missing one.
 * Changes to a session panel are journaled in its session as `panel` events, so the
 * conversation's streams show them live.
 */
export function panelRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const api = typed(app);
  const visibleSession = (principal: Principal, sessionId: string) =>
    findVisibleSession(deps.db, principal.tenant, sessionId, viewerOf(deps, principal));

  async function canSee(principal: Principal, found: Panel): Promise<boolean> {
    if (found.owner === principal.user) return true;
    if (found.scope === 'session') {
      return (
        found.session_id !== null && (await visibleSession(principal, found.session_id)) !== null
      );
    }
    return (
      found.workspace_id !== null &&
      (await findMemberWorkspace(deps.db, principal, found.workspace_id)) !== null
    );
  }

  async function visiblePanel(principal: Principal, rawId: string): Promise<Panel> {
    const panelId = pathId(rawId, 'panel_id');
    const found = await readPanel(deps.db, principal.tenant, panelId);
    if (!found || !(await canSee(principal, found))) {
      throw new ParleyError('panel_not_found', 'no such panel');
    }
    return found;
  }

  async function ownedPanel(principal: Principal, rawId: string): Promise<Panel> {
    const found = await visiblePanel(principal, rawId);
    if (found.owner !== principal.user && !hasRole(principal, 'admin')) {
      throw new ParleyError('forbidden', "only the panel's owner or an admin changes it");
    }
    return found;
  }

  api.get(panelContracts.palette.url, routeOptions(panelContracts.palette), async () => ({
    components: palette(),
  }));

  api.get(panelContracts.list.url, routeOptions(panelContracts.list), async (request) => {
    const { principal } = request;
    const query = request.query;
    const page = { limit: query.limit, cursor: cursorOf(query.cursor) };
    let filter: PanelFilter;
    if (query.session_id !== undefined) {
      if (!(await visibleSession(principal, query.session_id))) {
        throw new ParleyError('session_not_found', 'session_id: no such session');
      }
      filter = { tenant: principal.tenant, sessionId: query.session_id };
    } else if (query.workspace_id !== undefined) {
      if (!(await findMemberWorkspace(deps.db, principal, query.workspace_id))) {
        throw new ParleyError('workspace_not_found', 'workspace_id: no such workspace');
      }
      filter = { tenant: principal.tenant, workspaceId: query.workspace_id };
    } else {
      filter = { tenant: principal.tenant, owner: principal.user, scope: query.scope ?? null };
    }
    return listPanels(deps.db, filter, page);
  });

  api.post(
    panelContracts.create.url,
    routeOptions(panelContracts.create),
    async (request, reply) => {
      const { principal } = request;
      const body = request.body;
      const document = checkedDocument(body.document);
      if (body.scope === 'session' && body.session_id === undefined) {
        throw new ParleyError('invalid_request', 'session_id: a session panel needs its session', {
          field: 'session_id',
        });
      }
      if (body.session_id !== undefined && !(await visibleSession(principal, body.session_id))) {
        throw new ParleyError('session_not_found', 'session_id: no such session');
      }
      if (
        body.workspace_id !== undefined &&
        !(await findMemberWorkspace(deps.db, principal, body.workspace_id))
      ) {
        throw new ParleyError('workspace_not_found', 'workspace_id: no such workspace');
      }
      const fresh = {
        id: newPanelId(),
        tenant: principal.tenant,
        owner: principal.user,
        scope: body.scope,
        sessionId: body.session_id ?? null,
        workspaceId: body.workspace_id ?? null,
        title: body.title,
        channel: body.channel ?? defaultPanelChannel,
        document,
      };
      const made = await deps.db.transaction(async (tx) => {
        // The session row first (the journal's counter), then the panel: one lock order.
        if (fresh.scope === 'session' && fresh.sessionId !== null) {
          await journalEvents(tx, fresh.sessionId, [
            newEvent('panel', null, {
              action: 'shown',
              panel_id: fresh.id,
              scope: 'session',
              title: fresh.title,
              channel: fresh.channel,
              document,
              by: 'user',
            }),
          ]);
        }
        return insertPanel(tx, fresh);
      });
      return reply.status(201).send(made as Panel);
    },
  );

  api.get(panelContracts.get.url, routeOptions(panelContracts.get), async (request) =>
    visiblePanel(request.principal, request.params.panelId),
  );

  api.put(panelContracts.replace.url, routeOptions(panelContracts.replace), async (request) => {
    const found = await ownedPanel(request.principal, request.params.panelId);
    const body = request.body;
    const document = checkedDocument(body.document);
    const change = { title: body.title, channel: body.channel ?? found.channel, document };
    const updated = await deps.db.transaction(async (tx) => {
      // Locked, then journaled: a change that lost a race with a delete writes nothing.
      if (!(await lockPanel(tx, request.principal.tenant, found.id))) return null;
      if (found.scope === 'session' && found.session_id !== null) {
        await journalEvents(tx, found.session_id, [
          newEvent('panel', null, {
            action: 'updated',
            panel_id: found.id,
            ...change,
            by: 'user',
          }),
        ]);
      }
      return updatePanel(tx, request.principal.tenant, found.id, change);
    });
    if (!updated) throw new ParleyError('panel_not_found', 'no such panel');
    return updated;
  });

  api.delete(
    panelContracts.delete.url,
    routeOptions(panelContracts.delete),
    async (request, reply) => {
      const found = await ownedPanel(request.principal, request.params.panelId);
      const deleted = await deps.db.transaction(async (tx) => {
        if (!(await lockPanel(tx, request.principal.tenant, found.id))) return false;
        if (found.scope === 'session' && found.session_id !== null) {
          await journalEvents(tx, found.session_id, [
            newEvent('panel', null, { action: 'deleted', panel_id: found.id, by: 'user' }),
          ]);
        }
        return deletePanel(tx, request.principal.tenant, found.id);
      });
      if (!deleted) throw new ParleyError('panel_not_found', 'no such panel');
      return reply.status(204).send();
    },
  );

  api.post(
    panelContracts.submit.url,
    routeOptions(panelContracts.submit),
    async (request, reply) => {
      const { principal } = request;
      const found = await visiblePanel(principal, request.params.panelId);
      const body = request.body;
      const form = formsOf(found.document).get(body.form);
      if (!form) {
        throw new ParleyError('invalid_form', `form: the panel has no form "${body.form}"`, {
          field: 'form',
        });
      }
      const values = checkedValues(form, body.values);
      if (found.session_id === null || !(await visibleSession(principal, found.session_id))) {
        throw new ParleyError('session_not_found', "the panel's conversation is gone");
      }
      const admitted = await admitForPrincipal(deps, principal, {
        turnId: body.turn_id,
        sessionId: found.session_id,
        agent: null,
        message: formMessage(found, form, values),
        metadata: { panel_id: found.id, form: form.name },
      });
      return reply.status(202).send(admitted);
    },
  );
}

type FormValue = string | number | boolean | null;

/** A form's values as submitted, checked field by field: `invalid_form` names the field. */
function checkedValues(
  form: PanelForm,
  values: Record<string, FormValue>,
): Record<string, FormValue> {
  const fields = new Map(form.fields.map((field) => [field.name, field]));
  for (const name of Object.keys(values)) {
    if (!fields.has(name)) {
      throw new ParleyError('invalid_form', `values.${name}: not a field of the form`, {
        field: `values.${name}`,
      });
    }
  }
  const checked: Record<string, FormValue> = {};
  for (const field of form.fields) {
    const value = values[field.name] ?? null;
    const fail = (message: string): never => {
      throw new ParleyError('invalid_form', `values.${field.name}: ${message}`, {
        field: `values.${field.name}`,
      });
    };
    if (value === null || value === '') {
      if (field.required) fail('required');
      checked[field.name] = null;
      continue;
    }
    if (field.kind === 'number' && typeof value !== 'number') fail('must be a number');
    if (field.kind === 'boolean' && typeof value !== 'boolean') fail('must be true or false');
    if ((field.kind === 'text' || field.kind === 'textarea') && typeof value !== 'string') {
      fail('must be text');
    }
    if (field.kind === 'select' && !field.options?.includes(String(value))) {
      fail(`must be one of ${field.options?.join(', ')}`);
    }
    checked[field.name] = value;
  }
  return checked;
}

/** What the agent receives: which form of which panel, and the values as JSON. */
function formMessage(found: Panel, form: PanelForm, values: Record<string, FormValue>): string {
  const name = form.title ?? form.name;
  return `Form "${name}" submitted on panel "${found.title}" (${found.id}):\n${JSON.stringify(values, null, 2)}`;
}
