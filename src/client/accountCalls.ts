import { MediaCalls } from './mediaCalls.js';
import type { Me, Preferences, WorkspaceInfo } from './types.js';

/**
 * The client SDK's calls about the caller itself: its principal, its preferences, and the
 * workspaces of its tenant. `ParleyClient` extends it: these are its methods.
 */
export abstract class AccountCalls extends MediaCalls {
  /** Extension: the caller's principal; a 401 here means the API key is missing or wrong. */
  me(options: { signal?: AbortSignal } = {}): Promise<Me> {
    return this.http.request('GET', '/api/v1/me', { signal: options.signal });
  }

  /** Extension: the caller's preferences (the defaults until first saved). */
  preferences(options: { signal?: AbortSignal } = {}): Promise<Preferences> {
    return this.http.request('GET', '/api/v1/me/preferences', { signal: options.signal });
  }

  /** Extension: replaces the caller's preferences (a key left out goes back to its default). */
  savePreferences(
    preferences: Partial<Preferences>,
    options: { signal?: AbortSignal } = {},
  ): Promise<Preferences> {
    return this.http.request('PUT', '/api/v1/me/preferences', {
      body: preferences,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Extension: the workspaces of the caller's tenant it is a member of, by name. */
  listWorkspaces(options: { signal?: AbortSignal } = {}): Promise<{ items: WorkspaceInfo[] }> {
    return this.http.request('GET', '/api/v1/workspaces', { signal: options.signal });
  }

  /** Extension: a workspace the caller is a member of (404 `workspace_not_found` else). */
  getWorkspace(
    workspaceId: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<WorkspaceInfo> {
    return this.http.request('GET', workspacePath(workspaceId), { signal: options.signal });
  }

  /**
   * Extension (admins): creates a workspace. Not retried: a retry after a lost answer would
   * read 409 `workspace_name_taken`. No members: the whole tenant's.
   */
  createWorkspace(
    workspace: {
      name: string;
      description?: string | null;
      members?: { roles?: string[]; users?: string[] };
    },
    options: { signal?: AbortSignal } = {},
  ): Promise<WorkspaceInfo> {
    return this.http.request('POST', '/api/v1/workspaces', {
      body: workspace,
      idempotent: false,
      signal: options.signal,
    });
  }

  /** Extension (admins): renames, describes, or changes a workspace's members (a list given replaces it). */
  updateWorkspace(
    workspaceId: string,
    change: {
      name?: string;
      description?: string | null;
      members?: { roles?: string[]; users?: string[] };
    },
    options: { signal?: AbortSignal } = {},
  ): Promise<WorkspaceInfo> {
    return this.http.request('PATCH', workspacePath(workspaceId), {
      body: change,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Extension (admins): deletes a workspace; its sessions and executions stay, in none. */
  deleteWorkspace(workspaceId: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    return this.http.request('DELETE', workspacePath(workspaceId), {
      idempotent: false,
      signal: options.signal,
    });
  }
}

function workspacePath(workspaceId: string): string {
  return `/api/v1/workspaces/${encodeURIComponent(workspaceId)}`;
}
