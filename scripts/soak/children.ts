import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's root: where `dist/` is, the working directory of every child. */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The parent's environment minus anything that could steer a child's storage or config. */
export function childEnvironment(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith('PARLEY_') || name === 'DATABASE_URL') continue;
    if (name === 'NODE_OPTIONS') continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

/** `parley migrate` with `env`, as an operator runs it before starting the processes. */
export function migrate(env: Record<string, string>): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['dist/cli/main.js', 'migrate'], {
      cwd: root,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr += chunk));
    child.once('exit', (code) =>
      code === 0
        ? resolvePromise()
        : reject(new Error(`parley migrate failed (${code}): ${stderr}`)),
    );
  });
}
