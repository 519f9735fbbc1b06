import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { extractLaunch } from './sandbox.js';
import { discardStaging, stagingDir } from './workspace.js';

/**
 * What comes back from the sandbox on fd 3 (sandbox.ts, the wrapper): a report line, then
 * — when the working directory changed — a tar archive of it, which is unpacked into a
 * fresh directory by a confined `tar` (`extractLaunch`) when the call may be saved.
 */

/** The wrapper's report: `done <status> <free blocks> <changed>`, or `restore-failed`. */
export type Report =
  | { kind: 'done'; status: number; freeBlocks: number; changed: boolean }
  | { kind: 'restore-failed' }
  | { kind: 'none' };

export type SaveOutcome =
  | { kind: 'skipped' }
  | { kind: 'extracted'; staging: string }
  | { kind: 'overflow' }
  | { kind: 'failed' };

export interface Extraction {
  staging: string;
  input: Writable;
  finished: Promise<boolean>;
}

export async function startExtraction(
  workspaceDir: string,
  maxFileBytes: number,
): Promise<Extraction> {
  const staging = await stagingDir(workspaceDir);
  const launch = extractLaunch(staging, maxFileBytes);
  const child = spawn(launch.file, launch.args, {
    cwd: launch.cwd,
    env: launch.env,
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  const finished = new Promise<boolean>((resolve) => {
    child.on('error', () => resolve(false));
    child.on('close', (code) => resolve(code === 0));
  });
  const input = child.stdin;
  input.on('error', () => {});
  return { staging, input, finished };
}

/**
 * Reads fd 3: the report line, then the archive. `decide` sees the line and returns where
 * the archive goes (an extraction), or null to drop it. At most `maxArchiveBytes` are
 * passed on: past it the extraction is abandoned (`overflow`).
 */
export function readReport(
  stream: Readable,
  decide: (report: Report) => Promise<Extraction | null>,
  maxArchiveBytes: number,
): Promise<{ report: Report; saved: SaveOutcome }> {
  return new Promise((resolve) => {
    let head = Buffer.alloc(0);
    let report: Report | null = null;
    let target: Extraction | null = null;
    let decided: Promise<void> = Promise.resolve();
    let deciding = false;
    const pending: Buffer[] = [];
    let passed = 0;
    let overflow = false;
    stream.on('error', () => {});
    const forward = (chunk: Buffer) => {
      if (!target || overflow) return;
      passed += chunk.length;
      if (passed > maxArchiveBytes) {
        overflow = true;
        target.input.destroy();
        return;
      }
      if (!target.input.write(chunk)) {
        stream.pause();
        target.input.once('drain', () => stream.resume());
      }
    };
    stream.on('data', (chunk: Buffer) => {
      if (deciding) {
        pending.push(chunk);
        return;
      }
      if (report !== null) {
        forward(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const newline = head.indexOf(10);
      if (newline < 0 && head.length < 256) return;
      report = parseReport(newline < 0 ? '' : head.subarray(0, newline).toString('utf8'));
      if (newline >= 0 && newline + 1 < head.length) pending.push(head.subarray(newline + 1));
      deciding = true;
      stream.pause();
      decided = decide(report)
        .catch(() => null)
        .then((extraction) => {
          target = extraction;
          deciding = false;
          for (const buffered of pending.splice(0)) forward(buffered);
          stream.resume();
        });
    });
    const finish = async (): Promise<SaveOutcome> => {
      await decided;
      if (!target) return { kind: 'skipped' };
      if (overflow) {
        await target.finished;
        await discardStaging(target.staging);
        return { kind: 'overflow' };
      }
      target.input.end();
      if (await target.finished) return { kind: 'extracted', staging: target.staging };
      await discardStaging(target.staging);
      return { kind: 'failed' };
    };
    stream.on('close', () => {
      void finish().then((saved) => resolve({ report: report ?? { kind: 'none' }, saved }));
    });
  });
}

function parseReport(line: string): Report {
  if (line === 'restore-failed') return { kind: 'restore-failed' };
  const match = /^done (\d+) (\d+) ([01])$/.exec(line);
  return match
    ? {
        kind: 'done',
        status: Number(match[1]),
        freeBlocks: Number(match[2]),
        changed: match[3] === '1',
      }
    : { kind: 'none' };
}
