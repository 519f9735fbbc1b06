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
/** The host's name resolution files, bound only with `network: host`. */
const hostNetworkFiles = ['/etc/hosts', '/etc/resolv.conf', '/etc/gai.conf', '/etc/host.conf'];

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

/** Where the saved working directory is mounted (read-only) for the wrapper to copy in. */
const savedMount = '/run/parley/saved';

/** How the sandbox reaches the network: none, its own (slirp4netns), or the host's. */
export type NetworkMode = 'none' | 'isolated' | 'host';

export interface BwrapPlan {
  /** The session's saved working directory on the host (copied in, never written). */
  workspace: string;
  env: Record<string, string>;
  network: NetworkMode;
  /** Size of /workspace, and of each scratch file system (/tmp, /dev/shm). */
  workspaceBytes: number;
  /** network isolated: the resolv.conf naming slirp4netns's DNS forwarder. */
  resolvConf?: string;
}

/** File descriptors of a sandbox launch (stdio 0-2 besides). */
export const sandboxFds = {
  /** The wrapper's report line, then the working directory as a tar archive. */
  report: 3,
  /** network isolated: bubblewrap's --info-fd (the sandbox's first pid)... */
  info: 4,
  /** ...and --block-fd: the command waits until the network is up. */
  block: 5,
} as const;

/**
 * The bubblewrap options of a sandbox, up to (not including) the program. Inside: new
 * user (uid 65534, no capabilities, no nested user namespaces), pid, ipc, uts, cgroup and
 * — unless `network` is `host` — network namespaces; the system folders read-only; a fresh
 * /dev (read-only, its /dev/shm a size-capped tmpfs), /proc (of the new pid namespace: the
 * server's processes and their environments are not visible) and /tmp (a size-capped
 * tmpfs, discarded after the command); /workspace a size-capped tmpfs, filled from the
 * session's saved directory (bound read-only at /run/parley/saved) by the wrapper; the
 * root itself read-only. The environment is exactly `env`. `--die-with-parent` and the
 * pid namespace take every process of the command down with bwrap, so killing bwrap's
 * process group kills all.
 */
export function bwrapOptions(plan: BwrapPlan): string[] {
  const size = String(plan.workspaceBytes);
  const networkFiles = plan.network === 'host' ? bindFiles(hostNetworkFiles) : [];
  const isolated =
    plan.network === 'isolated'
      ? [
          ...bindFiles(['/etc/hosts', '/etc/host.conf', '/etc/gai.conf']),
          '--ro-bind',
          plan.resolvConf ?? '/dev/null',
          '/etc/resolv.conf',
          '--info-fd',
          String(sandboxFds.info),
          '--block-fd',
          String(sandboxFds.block),
        ]
      : [];
  return [
    '--unshare-all',
    ...(plan.network === 'host' ? ['--share-net'] : []),
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
    ...Object.entries(plan.env).flatMap(([name, value]) => ['--setenv', name, value]),
    ...systemBinds(),
    ...bindFiles(etcFiles),
    ...networkFiles,
    ...isolated,
    '--dev',
    '/dev',
    '--size',
    size,
    '--tmpfs',
    '/dev/shm',
    '--remount-ro',
    '/dev',
    '--proc',
    '/proc',
    '--size',
    size,
    '--tmpfs',
    '/tmp',
    '--ro-bind',
    plan.workspace,
    savedMount,
    '--size',
    size,
    '--tmpfs',
    SANDBOX_HOME,
    '--remount-ro',
    '/',
    '--chdir',
    SANDBOX_HOME,
  ];
}

/**
 * The wrapper that runs inside the sandbox, around the command (`$1`; the rlimit program
 * and its options follow). It copies the saved directory into /workspace (a failure means
 * it does not fit: `restore-failed`), runs the command under the rlimits with stdin empty
 * and fd 3 closed (the wrapper's own messages go nowhere), ends whatever the command left running, and reports on fd 3:
 * `done <status> <free blocks of /workspace> <changed: 0|1>`, then — if the directory
 * changed (its listing of names, types, sizes, modes, times and link targets differs) —
 * the directory as a tar archive, which the server saves only if the call ended within its
 * limits (sandboxedCall.ts). Everything it runs is from /usr: cp, stat, chmod, md5sum
 * (coreutils), find (findutils), tar, prlimit (util-linux).
 */
const listing = `find ${SANDBOX_HOME} -printf '%P %y %s %m %T@ %l\\n' 2>/dev/null | md5sum`;
const wrapperScript = [
  // The wrapper's own messages (a child killed by a signal...) are not the command's output.
  'exec </dev/null 9>&2 2>/dev/null',
  `if ! cp -a ${savedMount}/. ${SANDBOX_HOME}/ 2>/dev/null; then echo restore-failed >&3; exit 0; fi`,
  `before=$(${listing})`,
  'command=$1; shift',
  '"$@" /bin/bash -c "$command" 2>&9 3>&- 9>&-',
  'status=$?',
  // Everything else of the sandbox's user but this shell (and bwrap's init, pid 1), until
  // nothing is left (a fork bomb forks while it is being killed); `kill` is a builtin.
  'i=0; while kill -KILL -1 2>/dev/null && [ $i -lt 10000 ]; do i=$((i + 1)); done',
  `free=$(stat -f -c %a ${SANDBOX_HOME})`,
  `if [ "$(${listing})" = "$before" ]; then echo "done $status $free 0" >&3; exit 0; fi`,
  `chmod -R u+rwX ${SANDBOX_HOME} 2>/dev/null`,
  'echo "done $status $free 1" >&3',
  `exec tar -C ${SANDBOX_HOME} -cf - . 2>/dev/null >&3`,
].join('\n');

/** The bubblewrap command line for one command: the sandbox, the wrapper, the rlimits. */
export function bwrapLaunch(command: string, plan: BwrapPlan, rlimits: string[]): Launch {
  return {
    file: 'bwrap',
    args: [
      ...bwrapOptions(plan),
      '/bin/bash',
      '-c',
      wrapperScript,
      'parley-sandbox',
      command,
      ...rlimits,
    ],
    cwd: plan.workspace,
    env: {},
  };
}

/**
 * Saves a tar archive (on stdin) into `target`: tar runs in a sandbox of its own whose only
 * writable path is `target` (at /workspace), as the same unprivileged user, so an archive
 * the command crafted can write nowhere else — links and `..` included.
 */
export function extractLaunch(target: string, maxFileBytes: number): Launch {
  return {
    file: 'bwrap',
    args: [
      '--unshare-all',
      '--unshare-user',
      '--disable-userns',
      '--uid',
      '65534',
      '--gid',
      '65534',
      '--cap-drop',
      'ALL',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
      '--setenv',
      'PATH',
      SANDBOX_PATH,
      ...systemBinds(),
      ...bindFiles(etcFiles),
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--bind',
      target,
      SANDBOX_HOME,
      '--remount-ro',
      '/',
      '--chdir',
      SANDBOX_HOME,
      'prlimit',
      `--fsize=${maxFileBytes}`,
      '--',
      'tar',
      '-xf',
      '-',
      '--no-same-owner',
      '--delay-directory-restore',
    ],
    cwd: target,
    env: {},
  };
}

/**
 * `sandbox: none`: the command runs as the server's user, in the working directory, under
 * the rlimits (`rlimits`: the prlimit program and its options, ending with `--`).
 */
export function plainLaunch(
  command: string,
  workspace: string,
  env: Record<string, string>,
  rlimits: string[],
): Launch {
  const [program = shellPath(), ...options] = rlimits;
  return {
    file: program,
    args: [...options, shellPath(), '-c', command],
    cwd: workspace,
    env: { ...env, HOME: workspace },
  };
}

export function shellPath(): string {
  return existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/**
 * Whether bubblewrap is installed and allowed to create its namespaces here (a container
 * may forbid user namespaces): runs `true` in the same sandbox a command gets, size-capped
 * tmpfs mounts included (bubblewrap 0.8 or later). Returns null when it works, else the
 * reason, for the start-up message.
 */
export function checkBwrap(workspace: string, program = 'bwrap'): string | null {
  const options = bwrapOptions({
    workspace,
    env: { PATH: SANDBOX_PATH },
    network: 'none',
    workspaceBytes: 1024 * 1024,
  });
  const result = spawnSync(program, [...options, 'true'], { cwd: workspace, timeout: 10_000 });
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
