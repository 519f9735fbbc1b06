import { lstat, mkdir, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** A path segment from a name: reversible, and never `.`, `..` or containing `/`. */
function segment(name: string): string {
  return encodeURIComponent(name).replace(/\./g, '%2E');
}

/**
 * The working directory of one session: `<root>/<tenant>/<session>` (root: the
 * configured `tools.workspace_dir`, by default `<data_dir>/workspaces`). Tenant and
 * session are encoded so neither can climb out of the root.
 */
export function workspaceDir(root: string, tenant: string, sessionId: string): string {
  return resolve(root, segment(tenant), segment(sessionId));
}

/** Creates the directory (owner-only) if needed; the sandbox binds it writable. */
export async function ensureWorkspace(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

export interface WorkspaceFile {
  /** Relative to the working directory, `/`-separated. */
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  modified_at: string;
}

/**
 * The files of a working directory, depth-first, sorted by path, at most `limit` entries
 * (`truncated` says there were more). Symbolic links are listed, never followed: a link a
 * command made to somewhere else must not make the server read there.
 */
export async function listWorkspaceFiles(
  dir: string,
  limit = 1000,
): Promise<{ files: WorkspaceFile[]; truncated: boolean }> {
  const files: WorkspaceFile[] = [];
  let truncated = false;
  const walk = async (relative: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(join(dir, relative), { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (files.length >= limit) {
        truncated = true;
        return;
      }
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      const stats = await lstat(join(dir, path));
      const type = entry.isSymbolicLink()
        ? 'symlink'
        : entry.isDirectory()
          ? 'directory'
          : entry.isFile()
            ? 'file'
            : 'other';
      files.push({ path, type, size: stats.size, modified_at: stats.mtime.toISOString() });
      if (type === 'directory') await walk(path);
    }
  };
  await walk('');
  return { files, truncated };
}
