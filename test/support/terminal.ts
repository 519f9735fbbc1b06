import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';

const mainJs = resolve(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');

/**
 * `parley chat` in real pseudo-terminals: tmux runs the built command (dist/, built by the
 * global setup), tests type keys and read the screen. A private tmux socket per test file
 * keeps its terminals apart from anything else on the machine.
 */
export function chatTerminals(options: { prefix: string; width: number; height: number }) {
  const socket = `${options.prefix}-${process.pid}-${randomBytes(4).toString('hex')}`;
  const terminals: string[] = [];
  let count = 0;

  function tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  }

  function alive(name: string): boolean {
    return spawnSync('tmux', ['-L', socket, 'has-session', '-t', name]).status === 0;
  }

  function screen(name: string): string {
    try {
      return tmux('capture-pane', '-p', '-J', '-S', '-1000', '-t', name);
    } catch {
      return '';
    }
  }

  /** Starts `parley chat ARGS` in a new detached terminal; returns its name. */
  function startChat(args: string[]): string {
    const name = `chat${count++}`;
    const command = ['exec', process.execPath, mainJs, 'chat', ...args].join(' ');
    tmux(
      'new-session',
      '-d',
      '-s',
      name,
      '-x',
      String(options.width),
      '-y',
      String(options.height),
      command,
    );
    terminals.push(name);
    return name;
  }

  function type(name: string, text: string): void {
    tmux('send-keys', '-t', name, '-l', text);
    tmux('send-keys', '-t', name, 'Enter');
  }

  async function until(condition: () => boolean, what: string, name: string): Promise<void> {
    const deadline = Date.now() + 45_000;
    while (!condition()) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; the screen:\n${screen(name)}`);
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
  }

  return { socket, terminals, tmux, alive, screen, startChat, type, until };
}
