import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

/**
 * `network: true`: the sandbox keeps its own network namespace (nothing of the host's
 * interfaces, loopback included), and slirp4netns gives it a user-mode NAT to the outside:
 * a `tap0` with 10.0.2.100/24, the gateway 10.0.2.2 and a DNS forwarder at 10.0.2.3.
 * `--disable-host-loopback` refuses connections to the gateway address, which slirp4netns
 * would otherwise map to the host's 127.0.0.1: services listening only on the host's
 * loopback (a local PostgreSQL, Parley's own dev-mode API) are out of reach. Connections
 * to any other address — the internet, the host's other addresses, private networks —
 * leave through slirp4netns's sockets, as the server's user, as any outbound connection
 * of the server would.
 *
 * slirp4netns joins the sandbox's network namespace by path (/proc/PID/ns/net): as root it
 * may; an unprivileged server would have to enter bubblewrap's user namespace first, and
 * with `--disable-userns` the command's namespace is a nested one that does not own the
 * network namespace — so the start-up check (startup.ts) fails there, naming the choice.
 */

const readyTimeoutMs = 10_000;

export interface SandboxNetwork {
  /** Ends slirp4netns (closing its exit fd); idempotent. */
  stop(): void;
}

/**
 * Attaches slirp4netns to the network namespace of `pid` (the sandbox's first process,
 * from bubblewrap's --info-fd) and resolves when the interface is configured. Rejects
 * with the reason when it cannot (not installed, not permitted, too slow).
 */
export function attachNetwork(
  pid: number,
  signal: AbortSignal,
  program = 'slirp4netns',
): Promise<SandboxNetwork> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      program,
      [
        '--configure',
        '--mtu=65520',
        '--disable-host-loopback',
        '--enable-sandbox',
        '--enable-seccomp',
        '--ready-fd=3',
        '--exit-fd=4',
        '--netns-type=path',
        `/proc/${pid}/ns/net`,
        'tap0',
      ],
      { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], env: {} },
    );
    const stderr: Buffer[] = [];
    (child.stdio[2] as Readable).on('data', (chunk: Buffer) => {
      if (stderr.length < 32) stderr.push(chunk);
    });
    const exitFd = child.stdio[4] as Writable;
    exitFd.on('error', () => {});
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      exitFd.destroy();
      // The exit fd ends it; the kill is for one that does not notice.
      setTimeout(() => child.kill('SIGKILL'), 2000).unref();
    };
    const fail = (reason: string) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      stop();
      reject(new Error(reason));
    };
    const onAbort = () => fail('cancelled');
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => fail('slirp4netns was not ready in time'), readyTimeoutMs);
    child.on('error', (error) => fail(`slirp4netns could not start (${error.message})`));
    child.on('exit', () => {
      const detail = Buffer.concat(stderr)
        .toString('utf8')
        .split('\n')
        .filter((line) => line && !line.startsWith('WARNING'))
        .pop();
      fail(`slirp4netns ended${detail ? `: ${detail}` : ''}`);
    });
    (child.stdio[3] as Readable).once('data', () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      child.removeAllListeners('exit');
      resolve({ stop });
    });
  });
}

let resolvConf: string | null = null;

/** The sandbox's /etc/resolv.conf: slirp4netns's DNS forwarder. Written once per process. */
export function sandboxResolvConf(): string {
  if (!resolvConf) {
    const dir = mkdtempSync(join(tmpdir(), 'parley-net-'));
    resolvConf = join(dir, 'resolv.conf');
    writeFileSync(resolvConf, 'nameserver 10.0.2.3\n', { mode: 0o644 });
  }
  return resolvConf;
}
