import type { spawn as nodeSpawn } from 'node:child_process';
import { BoundedBuffer, TooLargeError } from './bounded.js';
import { SpeechFailure } from './failure.js';
import { settleWavLengths } from './wav.js';

export type Spawn = typeof nodeSpawn;

/**
 * espeak-ng on this machine (Debian's `espeak-ng` package): `espeak-ng -v KEY --stdout
 * --stdin` reads the text from its standard input (never an argument, never a shell) and
 * writes a WAV to its standard output. The run ends with the signal (the synthesis
 * deadline) and past `maxBytes` of output; the WAV's lengths are settled (wav.ts).
 */
export async function speakWithEspeak(
  spawn: Spawn,
  options: {
    command: string;
    voiceKey: string;
    text: string;
    maxBytes: number;
    signal: AbortSignal;
  },
): Promise<Uint8Array> {
  const { voiceKey, text, maxBytes, signal } = options;
  return new Promise<Uint8Array>((resolve, reject) => {
    const child = spawn(options.command, ['-v', voiceKey, '-b', '1', '--stdout', '--stdin'], {
      stdio: ['pipe', 'pipe', 'ignore'],
      signal,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
    });
    const output = new BoundedBuffer(maxBytes);
    let failure: SpeechFailure | null = null;
    const fail = (problem: SpeechFailure) => {
      failure ??= problem;
      child.kill('SIGKILL');
    };
    child.stdout.on('data', (chunk: Buffer) => {
      try {
        output.push(chunk);
      } catch (error) {
        if (error instanceof TooLargeError) {
          fail(new SpeechFailure(`espeak-ng wrote more than ${maxBytes} bytes of audio`));
        } else throw error;
      }
    });
    child.stdin.on('error', () => {
      // The process ended before reading all of its input: its exit says why.
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.name === 'AbortError') fail(new SpeechFailure('espeak-ng took too long'));
      else if (error.code === 'ENOENT') {
        fail(new SpeechFailure('espeak-ng is not installed on this machine'));
      } else fail(new SpeechFailure('espeak-ng could not be started'));
    });
    child.on('close', (code) => {
      if (failure) reject(failure);
      else if (signal.aborted) reject(new SpeechFailure('espeak-ng took too long'));
      else if (code !== 0) reject(new SpeechFailure(`espeak-ng exited with code ${code}`));
      else resolve(settleWavLengths(output.bytes()));
    });
    child.stdin.end(text, 'utf8');
  });
}
