import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

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

/**
 * Creates the directory (owner-only) if needed. A call is saved by two renames
 * (`replaceWorkspace`): a server that died between them left the directory's previous
 * version aside, which is put back; versions of calls that never finished are removed.
 * The caller holds the directory's lock (`withWorkspace`).
 */
export async function ensureWorkspace(dir: string): Promise<void> {
  const parent = dirname(dir);
  await mkdir(parent, { recursive: true, mode: 0o700 });
  const siblings = await readdir(parent);
  for (const name of siblings) {
    if (name.startsWith(`.${basename(dir)}.new-`)) {
      await rm(join(parent, name), { recursive: true, force: true });
    }
  }
  const aside = siblings.find((name) => name.startsWith(`.${basename(dir)}.old-`));
  if (aside !== undefined && !siblings.includes(basename(dir))) {
    await rename(join(parent, aside), dir);
    return;
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

const running = new Map<string, Promise<unknown>>();

/**
 * Runs `work` alone for this working directory (in this process): a sandboxed call works
 * on a copy and saves it back whole, so two calls of one session at once would lose one's
 * changes. Calls of one session run one after the other, each seeing the last one's files.
 */
export function withWorkspace<T>(dir: string, work: () => Promise<T>): Promise<T> {
  const before = running.get(dir) ?? Promise.resolve();
  const mine = before.then(work, work);
  const settled = mine.catch(() => {});
  running.set(dir, settled);
  void settled.then(() => {
    if (running.get(dir) === settled) running.delete(dir);
  });
  return mine;
}

/**
 * A fresh directory beside `dir` for its next version (`.<name>.new-<random>`: a name no
 * session directory can have, their dots being encoded).
 */
export async function stagingDir(dir: string): Promise<string> {
  const staging = join(dirname(dir), `.${basename(dir)}.new-${randomBytes(6).toString('hex')}`);
  await mkdir(staging, { mode: 0o700 });
  return staging;
}

/** Puts `staging` in place of `dir` (two renames), then removes the old version. */
export async function replaceWorkspace(dir: string, staging: string): Promise<void> {
  const old = join(dirname(dir), `.${basename(dir)}.old-${randomBytes(6).toString('hex')}`);
  await rename(dir, old);
  await rename(staging, dir);
  await rm(old, { recursive: true, force: true });
}

export async function discardStaging(staging: string): Promise<void> {
  await rm(staging, { recursive: true, force: true });
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
