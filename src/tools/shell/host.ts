import {
  accessSync,
  constants,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, join, relative } from 'node:path';

/**
 * What this machine offers to enforce a shell call's limits, found once per process
 * (docs/tools.md, "Limits"):
 *
 * - cgroup v1 `pids` and `memory` hierarchies where this process may create child groups
 *   (it needs write access to its own group: root, or a delegated group). Each call gets
 *   its own group, `<this process's group>/parley-shell-<pid>-<random>`: a pids.max and a
 *   memory limit over every process of the call together. cgroup v2 is not used: a group with
 *   controllers enabled for children may not hold processes itself, so using it would mean
 *   moving this process — not something a library should do behind an operator's back.
 * - rlimits (prlimit, util-linux) always: RLIMIT_CPU per process, RLIMIT_FSIZE,
 *   RLIMIT_NPROC (which the kernel does not apply to root: without a pids cgroup a root
 *   server has no process limit), and RLIMIT_AS when there is no memory cgroup.
 * - slirp4netns, for a sandbox's own network (network.ts).
 */
export interface SandboxHost {
  /** Where per-call pids groups are made; null with the reason in `notes`. */
  pidsCgroup: string | null;
  memoryCgroup: string | null;
  /** memory.memsw.limit_in_bytes exists: swap is limited too. */
  memorySwap: boolean;
  /** The server runs as root: RLIMIT_NPROC binds nothing. */
  root: boolean;
  /** Why a mechanism is not available, for the start-up lines. */
  notes: string[];
}

let detected: SandboxHost | null = null;

/** The host's mechanisms, detected on first use and kept for the process. */
export function sandboxHost(): SandboxHost {
  detected ??= detectSandboxHost();
  return detected;
}

/** Call groups are `parley-shell-<pid>-<random>`, directly under this process's group. */
export const groupPrefix = 'parley-shell-';

function detectSandboxHost(): SandboxHost {
  const notes: string[] = [];
  const pids = cgroupParent('pids', (dir) => writeFileSync(join(dir, 'pids.max'), '8'));
  if (typeof pids !== 'string') notes.push(pids.reason);
  const memory = cgroupParent('memory', (dir) =>
    writeFileSync(join(dir, 'memory.limit_in_bytes'), String(64 * 1024 * 1024)),
  );
  if (typeof memory !== 'string') notes.push(memory.reason);
  let memorySwap = false;
  if (typeof memory === 'string') {
    try {
      accessSync(join(memory, 'memory.memsw.limit_in_bytes'), constants.W_OK);
      memorySwap = true;
    } catch {
      notes.push('memory cgroup without swap accounting: swap is not limited');
    }
  }
  return {
    pidsCgroup: typeof pids === 'string' ? pids : null,
    memoryCgroup: typeof memory === 'string' ? memory : null,
    memorySwap,
    root: process.getuid?.() === 0,
    notes,
  };
}

/**
 * This process's v1 group of `controller`, proven writable by making (and removing) a
 * probe group in it with `probe` applied. Call groups go directly under it and are removed
 * after each call, so nothing is left behind in a group the server does not own; those of
 * a process that is gone (a crash) are removed here.
 */
function cgroupParent(
  controller: 'pids' | 'memory',
  probe: (dir: string) => void,
): string | { reason: string } {
  let own: string;
  try {
    own = ownCgroupDir(controller);
  } catch (error) {
    return { reason: `no ${controller} cgroup: ${(error as Error).message}` };
  }
  const probeDir = join(own, `${groupPrefix}${process.pid}-probe`);
  try {
    mkdirSync(probeDir);
    probe(probeDir);
  } catch (error) {
    return {
      reason: `the ${controller} cgroup ${own} is not writable here (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  } finally {
    try {
      rmdirSync(probeDir);
    } catch {
      // Not made, or already gone.
    }
  }
  removeStaleGroups(own);
  return own;
}

/** The v1 hierarchy directory of this process for `controller` (/proc/self/cgroup + mountinfo). */
function ownCgroupDir(controller: string): string {
  const membership = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields.length >= 3 && (fields[1] ?? '').split(',').includes(controller));
  if (!membership) throw new Error('not mounted as cgroup v1 (a cgroup v2 host)');
  const path = membership.slice(2).join(':');
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [mount, filesystem] = line.split(' - ');
    if (!mount || !filesystem) continue;
    const [type, , superOptions = ''] = filesystem.split(' ');
    if (type !== 'cgroup' || !superOptions.split(',').includes(controller)) continue;
    const fields = mount.split(' ');
    const root = unescapeMount(fields[3] ?? '/');
    const mountPoint = unescapeMount(fields[4] ?? '');
    return join(mountPoint, relative(root, path));
  }
  throw new Error('its hierarchy is not mounted');
}

function unescapeMount(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_match, octal: string) =>
    String.fromCharCode(parseInt(octal, 8)),
  );
}

/** Removes the call groups of processes that are gone. */
function removeStaleGroups(parent: string): void {
  for (const name of readdirSync(parent)) {
    if (!name.startsWith(groupPrefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(groupPrefix.length))?.[1]);
    if (!pid || pid === process.pid || alive(pid)) continue;
    try {
      rmdirSync(join(parent, name));
    } catch {
      // Still has processes, or another process removed it first.
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The absolute path of a program on PATH (or the usual system folders), or null. */
export function findProgram(name: string): string | null {
  if (name.includes('/')) return executable(name) ? name : null;
  const folders = [
    ...(process.env.PATH ?? '').split(delimiter),
    '/usr/local/sbin',
    '/usr/local/bin',
    '/usr/sbin',
    '/usr/bin',
    '/sbin',
    '/bin',
  ];
  for (const folder of folders) {
    if (!folder) continue;
    const candidate = join(folder, name);
    if (executable(candidate)) return candidate;
  }
  return null;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
