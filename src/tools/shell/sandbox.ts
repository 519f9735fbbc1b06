import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';

/** Where the session's working directory appears inside the sandbox (also HOME). */
export const SANDBOX_HOME = '/workspace';
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** What a command runs as: the program and its arguments, its cwd and environment. */
export interface Launch {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/** Top-level system folders: bound read-only, or recreated as the symlinks they are. */
const systemDirs = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/*
 * The few files of /etc programs need. Not the whole /etc: it holds /etc/shadow, package
 * manager credentials (/etc/npmrc, /etc/pip.conf) and often the server's own config.
 */
const etcFiles = [
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/alternatives',
  '/etc/passwd',
  '/etc/group',
  '/etc/nsswitch.conf',
  '/etc/localtime',
  '/etc/mime.types',
  '/etc/ssl/certs',
  '/etc/ca-certificates',
];
/** Name resolution files, bound only when the command may use the network. */
const networkFiles = ['/etc/hosts', '/etc/resolv.conf', '/etc/gai.conf', '/etc/host.conf'];

function systemBinds(): string[] {
  const args: string[] = [];
  for (const dir of systemDirs) {
    if (!existsSync(dir)) continue;
    if (lstatSync(dir).isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else args.push('--ro-bind', dir, dir);
  }
  return args;
}

function bindFiles(files: string[]): string[] {
  // A file may be a symlink elsewhere (resolv.conf → /run/...): bind what it points to.
  return files
    .filter((file) => existsSync(file))
    .flatMap((file) => ['--ro-bind', realpathSync(file), file]);
}

/**
 * The bubblewrap command line for one command. Inside: new user (uid 65534, no
 * capabilities, no nested user namespaces), pid, ipc, uts, cgroup and — unless `network`
 * — network namespaces; the system folders read-only; a fresh /dev, /proc (of the new pid
 * namespace: the server's processes and their environments are not visible) and /tmp
 * (empty, discarded after the command); the session's working directory at /workspace,
 * the only writable path that outlives the command; the root itself read-only. The
 * environment is exactly `env`. `--die-with-parent` and the pid namespace take every
 * process of the command down with bwrap, so killing bwrap's process group kills all.
 */
export function bwrapLaunch(
  command: string,
  workspace: string,
  env: Record<string, string>,
  network: boolean,
): Launch {
  const args = [
    '--unshare-all',
    ...(network ? ['--share-net'] : []),
    '--unshare-user',
    '--disable-userns',
    '--uid',
    '65534',
    '--gid',
    '65534',
    '--cap-drop',
    'ALL',
    '--hostname',
    'parley',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    ...Object.entries(env).flatMap(([name, value]) => ['--setenv', name, value]),
    ...systemBinds(),
    ...bindFiles(network ? [...etcFiles, ...networkFiles] : etcFiles),
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    '--bind',
    workspace,
    SANDBOX_HOME,
    '--remount-ro',
    '/',
    '--chdir',
    SANDBOX_HOME,
    shellPath(),
    '-c',
    command,
  ];
  return { file: 'bwrap', args, cwd: workspace, env: {} };
}

/** `sandbox: none`: the command runs as the server's user, in the working directory. */
export function plainLaunch(
  command: string,
  workspace: string,
  env: Record<string, string>,
): Launch {
  return {
    file: shellPath(),
    args: ['-c', command],
    cwd: workspace,
    env: { ...env, HOME: workspace },
  };
}

export function shellPath(): string {
  return existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/**
 * Whether bubblewrap is installed and allowed to create its namespaces here (a container
 * may forbid user namespaces): runs `true` in the same sandbox a command gets. Returns
 * null when it works, else the reason, for the start-up message.
 */
export function checkBwrap(workspace: string, program = 'bwrap'): string | null {
  const probe = bwrapLaunch('true', workspace, { PATH: SANDBOX_PATH }, false);
  const result = spawnSync(program, probe.args, { cwd: workspace, timeout: 10_000 });
  if (result.error) {
    return (result.error as NodeJS.ErrnoException).code === 'ENOENT'
      ? 'bwrap is not installed (Debian: apt-get install bubblewrap)'
      : `bwrap could not run (${result.error.message})`;
  }
  if (result.status !== 0) {
    const detail = result.stderr.toString().trim().split('\n')[0] ?? '';
    return `bwrap cannot create its sandbox here: ${detail || `exit status ${result.status}`}`;
  }
  return null;
}
