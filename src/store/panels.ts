/** UI panels as Parley keeps them (the panels table; docs/web.md, "Panels"). */
import type { PanelComponent } from '../protocol/panels.js';
import type { Principal } from '../config/types.js';
import type { Queryable } from './db.js';
import { encodeCursor } from './listSessions.js';
import { userFeedReplayMs } from './userFeed.js';
import { memberParams, memberSql } from './workspaces.js';

export type PanelScope = 'session' | 'workspace';

/** A panel as the API shows it; `session_id` is the conversation its forms submit to. */
export interface Panel {
  id: string;
  owner: string;
  workspace_id: string | null;
  scope: PanelScope;
  session_id: string | null;
  title: string;
  channel: string;
  document: PanelComponent;
  created_at: string;
  updated_at: string;
}

interface PanelRow {
  panel_id: string;
  owner: string;
  workspace_id: string | null;
  scope: PanelScope;
  session_id: string | null;
  title: string;
  channel: string;
  document: PanelComponent;
  created_at: Date;
  updated_at: Date;
}

const columns = `panel_id, owner, workspace_id, scope, origin_session_id as session_id, title,
  channel, document, created_at, updated_at`;

function panelOf(row: PanelRow): Panel {
  return {
    id: row.panel_id,
    owner: row.owner,
    workspace_id: row.workspace_id,
    scope: row.scope,
    session_id: row.session_id,
    title: row.title,
    channel: row.channel,
    document: row.document,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** What a new panel is made of (its id made by the caller: a tool names it before commit). */
export interface NewPanel {
  id: string;
  tenant: string;
  owner: string;
  scope: PanelScope;
  /** The conversation it belongs to (`session` scope) or whose forms it submits to. */
  sessionId: string | null;
  workspaceId: string | null;
  title: string;
  channel: string;
  document: PanelComponent;
}

/** Stores a panel; a panel already stored under its id stays as it is (a replayed effect). */
export async function insertPanel(db: Queryable, panel: NewPanel): Promise<Panel | null> {
  const inserted = await db.query<PanelRow>(
    `insert into panels (panel_id, tenant, owner, scope, session_id, origin_session_id,
                         workspace_id, title, channel, document)
     values ($1, $2, $3, $4, case when $4 = 'session' then $5 end, $5, $6, $7, $8, $9::jsonb)
     on conflict (panel_id) do nothing
     returning ${columns}`,
    [
      panel.id,
      panel.tenant,
      panel.owner,
      panel.scope,
      panel.sessionId,
      panel.workspaceId,
      panel.title,
      panel.channel,
      JSON.stringify(panel.document),
    ],
  );
  const row = inserted.rows[0];
  return row ? panelOf(row) : null;
}

/** One panel of the tenant, whoever may see it (the caller decides). */
export async function readPanel(
  db: Queryable,
  tenant: string,
  panelId: string,
  lock = false,
): Promise<Panel | null> {
  const found = await db.query<PanelRow>(
    `select ${columns} from panels where panel_id = $1 and tenant = $2${lock ? ' for update' : ''}`,
    [panelId, tenant],
  );
  const row = found.rows[0];
  return row ? panelOf(row) : null;
}

/**
 * Locks a panel for a change, in the one lock order: the row of its session first (a
 * session panel's change is journaled there, as a reply's `update_panel` is), then its own.
 * Null when it is gone, so that a change that lost a race with a delete writes nothing.
 */
export async function lockPanel(
  tx: Queryable,
  tenant: string,
  panelId: string,
): Promise<Panel | null> {
  const seen = await readPanel(tx, tenant, panelId);
  if (!seen) return null;
  if (seen.session_id !== null) {
    await tx.query('select 1 from sessions where session_id = $1 for update', [seen.session_id]);
  }
  return readPanel(tx, tenant, panelId, true);
}

/** Replaces what a panel shows (the fields given; undefined: kept). Null: no such panel. */
export async function updatePanel(
  db: Queryable,
  tenant: string,
  panelId: string,
  change: { title?: string; channel?: string; document?: PanelComponent },
): Promise<Panel | null> {
  const updated = await db.query<PanelRow>(
    `update panels
        set title = coalesce($3, title),
            channel = coalesce($4, channel),
            document = coalesce($5::jsonb, document),
            updated_at = now()
      where panel_id = $1 and tenant = $2
      returning ${columns}`,
    [
      panelId,
      tenant,
      change.title ?? null,
      change.channel ?? null,
      change.document === undefined ? null : JSON.stringify(change.document),
    ],
  );
  const row = updated.rows[0];
  return row ? panelOf(row) : null;
}

/**
 * Deletes a panel; a workspace panel leaves a removal for the user stream (and removals
 * older than the stream's replay window, `userFeedReplayMs`, go). False when it was already gone.
 */
export async function deletePanel(
  db: Queryable,
  tenant: string,
  panelId: string,
): Promise<boolean> {
  const deleted = await db.query(
    `with gone as (
       delete from panels where panel_id = $1 and tenant = $2
       returning tenant, panel_id, owner, workspace_id, scope
     ), removed as (
       insert into panel_removals (tenant, panel_id, owner, workspace_id)
       select tenant, panel_id, owner, workspace_id from gone where scope = 'workspace'
       on conflict (tenant, panel_id) do update set removed_at = now()
     ), expired as (
       delete from panel_removals
        where tenant = $2 and removed_at < now() - make_interval(secs => $3::double precision / 1000)
     )
     select 1 from gone`,
    [panelId, tenant, userFeedReplayMs],
  );
  return deleted.rowCount > 0;
}

export interface PanelRemoval {
  panel_id: string;
  workspace_id: string | null;
}

/**
 * The workspace panels removed since `since` that a principal saw (its own, and those of
 * its workspaces), oldest first: what the user stream tells a desktop.
 */
export async function removedWorkspacePanels(
  db: Queryable,
  principal: Principal,
  since: Date,
  limit: number,
  after: { removal: PanelRemoval; at: Date } | null = null,
): Promise<{ removal: PanelRemoval; at: Date }[]> {
  const found = await db.query<PanelRemoval & { removed_at: Date }>(
    {
      name: 'removed_workspace_panels',
      text: `select r.panel_id, r.workspace_id, r.removed_at from panel_removals r
              where r.tenant = $1 and r.removed_at >= $2
                and (r.owner = $4 or exists (
                      select 1 from workspaces w
                       where w.tenant = r.tenant and w.workspace_id = r.workspace_id
                         and ${memberSql('w', 3)}))
                and ($7::timestamptz is null or (r.removed_at, r.panel_id) > ($7, $8))
              order by r.removed_at, r.panel_id
              limit $6`,
    },
    [
      principal.tenant,
      since,
      ...memberParams(principal),
      limit,
      after?.at ?? null,
      after?.removal.panel_id ?? null,
    ],
  );
  return found.rows.map((row) => ({
    removal: { panel_id: row.panel_id, workspace_id: row.workspace_id },
    at: row.removed_at,
  }));
}

/** Which panels a listing asks for: one session's, one workspace's, or the caller's own. */
export type PanelFilter =
  | { tenant: string; sessionId: string }
  | { tenant: string; workspaceId: string }
  | { tenant: string; owner: string; scope: PanelScope | null };

/**
 * Panels newest first (ids are ULIDs made at creation, so they sort by age; the cursor is
 * the last id). Who may see the listed session or workspace is the caller's check.
 */
export async function listPanels(
  db: Queryable,
  filter: PanelFilter,
  page: { limit: number; cursor: string | null },
): Promise<{ items: Panel[]; next_cursor: string | null }> {
  const params: unknown[] = [filter.tenant, page.limit + 1, page.cursor];
  let where: string;
  if ('sessionId' in filter) {
    params.push(filter.sessionId);
    where = "scope = 'session' and session_id = $4";
  } else if ('workspaceId' in filter) {
    params.push(filter.workspaceId);
    where = "scope = 'workspace' and workspace_id = $4";
  } else {
    params.push(filter.owner, filter.scope);
    where = 'owner = $4 and ($5::text is null or scope = $5)';
  }
  const found = await db.query<PanelRow>(
    `select ${columns} from panels
      where tenant = $1 and ${where} and ($3::text is null or panel_id < $3)
      order by panel_id desc
      limit $2`,
    params,
  );
  const rows = found.rows.slice(0, page.limit);
  const last = rows[rows.length - 1];
  return {
    items: rows.map(panelOf),
    next_cursor: found.rows.length > page.limit && last ? encodeCursor([last.panel_id]) : null,
  };
}

/**
 * The workspace panels a principal sees (its own, and those of its workspaces) changed
 * since `since`, oldest change first: what the user stream tells a desktop.
 */
export async function changedWorkspacePanels(
  db: Queryable,
  principal: Principal,
  since: Date,
  limit: number,
  after: { panel: Panel; at: Date } | null = null,
): Promise<{ panel: Panel; at: Date }[]> {
  const found = await db.query<PanelRow>(
    {
      name: 'changed_workspace_panels',
      text: `select ${columns} from panels p
              where p.tenant = $1 and p.scope = 'workspace' and p.updated_at >= $2
                and (p.owner = $4 or exists (
                      select 1 from workspaces w
                       where w.tenant = p.tenant and w.workspace_id = p.workspace_id
                         and ${memberSql('w', 3)}))
                and ($7::timestamptz is null or (p.updated_at, p.panel_id) > ($7, $8))
              order by p.updated_at, p.panel_id
              limit $6`,
    },
    [
      principal.tenant,
      since,
      ...memberParams(principal),
      limit,
      after?.at ?? null,
      after?.panel.id ?? null,
    ],
  );
  return found.rows.map((row) => ({ panel: panelOf(row), at: row.updated_at }));
}
