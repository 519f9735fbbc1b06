/**
 * Workspaces (docs/web.md, "Workspaces"): a tenant's named groups of sessions and
 * executions. Who is a member is decided here, in one SQL predicate (`memberSql`), so
 * the list, the detail and every check of a `workspace_id` (a session's, an execution's,
 * a preference, a panel's) agree.
 *
 * A principal is a member of a workspace of its tenant when
 * - its user is in `member_users`, or
 * - one of its roles is in `member_roles`, or
 * - both lists are empty (the workspace is the whole tenant's), or
 * - it is a tenant admin (the `admin` role, or `*`, which has every role): admins manage
 *   every workspace.
 * Anything else — another tenant's workspace included — is the same as a missing one.
 */
import { hasRole } from '../config/principals.js';
import type { Principal } from '../config/types.js';
import { isUniqueViolation, type Db, type Queryable } from './db.js';

export interface Workspace {
  tenant: string;
  workspace_id: string;
  name: string;
  description: string | null;
  member_roles: string[];
  member_users: string[];
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

/** The membership predicate over the workspaces row `alias`, parameters from `first`. */
export function memberSql(alias: string, first: number): string {
  const admin = `$${first}::boolean`;
  const user = `$${first + 1}::text`;
  const roles = `$${first + 2}::text[]`;
  return `(${admin}
      or ${user} = any(${alias}.member_users)
      or ${alias}.member_roles && ${roles}
      or (cardinality(${alias}.member_roles) = 0 and cardinality(${alias}.member_users) = 0))`;
}

/** `memberSql`'s parameters, in its order. */
export function memberParams(principal: Principal): unknown[] {
  return [hasRole(principal, 'admin'), principal.user, principal.roles];
}

/**
 * The workspace `workspaceId` of the principal's tenant, if the principal is a member;
 * null when it is missing, another tenant's, or not the principal's. What every
 * `workspace_id` a principal gives is checked with.
 */
export async function findMemberWorkspace(
  db: Db,
  principal: Principal,
  workspaceId: string,
): Promise<Workspace | null> {
  return memberWorkspace(db, principal, workspaceId);
}

/** The same, on any connection (inside a caller's transaction too). */
export async function memberWorkspace(
  db: Queryable,
  principal: Principal,
  workspaceId: string,
): Promise<Workspace | null> {
  const found = await db.query<Workspace>(
    {
      name: 'find_member_workspace',
      text: `select w.* from workspaces w
              where w.tenant = $1 and w.workspace_id = $2 and ${memberSql('w', 3)}`,
    },
    [principal.tenant, workspaceId, ...memberParams(principal)],
  );
  return found.rows[0] ?? null;
}

/** The workspaces of the principal's tenant it is a member of, by name. */
export async function listMemberWorkspaces(
  db: Queryable,
  principal: Principal,
): Promise<Workspace[]> {
  const found = await db.query<Workspace>(
    {
      name: 'list_member_workspaces',
      text: `select w.* from workspaces w
              where w.tenant = $1 and ${memberSql('w', 2)}
              order by lower(w.name), w.workspace_id`,
    },
    [principal.tenant, ...memberParams(principal)],
  );
  return found.rows;
}

/**
 * Holds a workspace of the tenant against deletion until the caller's transaction ends
 * (`for key share`: what a foreign key check takes), so a session or an execution put in
 * it meanwhile is one that `deleteWorkspace` then finds and clears. False when it is gone.
 */
export async function holdWorkspace(
  tx: Queryable,
  tenant: string,
  workspaceId: string,
): Promise<boolean> {
  const found = await tx.query(
    'select 1 from workspaces where tenant = $1 and workspace_id = $2 for key share',
    [tenant, workspaceId],
  );
  return found.rowCount > 0;
}

export interface NewWorkspace {
  tenant: string;
  workspaceId: string;
  name: string;
  description: string | null;
  memberRoles: string[];
  memberUsers: string[];
  createdBy: string;
}

/** Creates a workspace; `name_taken` when the tenant has one of that name (any case). */
export async function createWorkspace(
  db: Queryable,
  input: NewWorkspace,
): Promise<Workspace | 'name_taken'> {
  try {
    const created = await db.query<Workspace>(
      `insert into workspaces (tenant, workspace_id, name, description, member_roles,
                               member_users, created_by)
       values ($1, $2, $3, $4, $5::text[], $6::text[], $7)
       returning *`,
      [
        input.tenant,
        input.workspaceId,
        input.name,
        input.description,
        input.memberRoles,
        input.memberUsers,
        input.createdBy,
      ],
    );
    return created.rows[0] as Workspace;
  } catch (error) {
    if (isUniqueViolation(error)) return 'name_taken';
    throw error;
  }
}

/** What a PATCH changes: undefined keeps a field. */
export interface WorkspaceChange {
  name?: string;
  description?: string | null;
  memberRoles?: string[];
  memberUsers?: string[];
}

/** Changes the fields given; null when the workspace is gone, `name_taken` as create. */
export async function updateWorkspace(
  db: Queryable,
  tenant: string,
  workspaceId: string,
  change: WorkspaceChange,
): Promise<Workspace | null | 'name_taken'> {
  try {
    const updated = await db.query<Workspace>(
      `update workspaces
          set name = coalesce($3::text, name),
              description = case when $4::boolean then $5::text else description end,
              member_roles = coalesce($6::text[], member_roles),
              member_users = coalesce($7::text[], member_users),
              updated_at = now()
        where tenant = $1 and workspace_id = $2
        returning *`,
      [
        tenant,
        workspaceId,
        change.name ?? null,
        change.description !== undefined,
        change.description ?? null,
        change.memberRoles ?? null,
        change.memberUsers ?? null,
      ],
    );
    return updated.rows[0] ?? null;
  } catch (error) {
    if (isUniqueViolation(error)) return 'name_taken';
    throw error;
  }
}

/**
 * Deletes a workspace, in one transaction: its row is locked first (a session or an
 * execution being put in it waits, or has committed and is cleared here), then every
 * session and execution in it is taken out of it (`workspace_id` null), then the row
 * goes. False when it was already gone.
 */
export async function deleteWorkspace(
  db: Db,
  tenant: string,
  workspaceId: string,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const locked = await tx.query(
      'select 1 from workspaces where tenant = $1 and workspace_id = $2 for update',
      [tenant, workspaceId],
    );
    if (locked.rowCount === 0) return false;
    await tx.query(
      'update sessions set workspace_id = null where tenant = $1 and workspace_id = $2',
      [tenant, workspaceId],
    );
    await tx.query(
      'update executions set workspace_id = null where tenant = $1 and workspace_id = $2',
      [tenant, workspaceId],
    );
    await tx.query('delete from workspaces where tenant = $1 and workspace_id = $2', [
      tenant,
      workspaceId,
    ]);
    return true;
  });
}

/**
 * Puts a session in a workspace (null: in none). The workspace is held until the change
 * commits (`holdWorkspace`). `missing_workspace` when it is gone; false when the session is.
 * Not activity: `updated_at` stays.
 */
export async function setSessionWorkspace(
  db: Db,
  tenant: string,
  sessionId: string,
  workspaceId: string | null,
): Promise<boolean | 'missing_workspace'> {
  return db.transaction(async (tx) => {
    if (workspaceId !== null && !(await holdWorkspace(tx, tenant, workspaceId))) {
      return 'missing_workspace';
    }
    const updated = await tx.query(
      'update sessions set workspace_id = $3 where tenant = $1 and session_id = $2',
      [tenant, sessionId, workspaceId],
    );
    return updated.rowCount > 0;
  });
}
