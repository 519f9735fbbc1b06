import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/** Runs the real, built `parley` command (test/support/build.ts builds it first). */
function parley(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/cli/main.js', ...args, '--url', server.url], {
      env: { ...process.env, PARLEY_CONFIG: '', DATABASE_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    runtime: { execution_recheck_ms: 300 },
    missions: {
      tidy: { prompt: 'Tidy {{room}}.', loop_prompt: '/decide continue:2', namespace: 'house' },
      wait: { prompt: 'Wait.', loop_prompt: '/decide continue:9', loop_delay_seconds: 3600 },
    },
    schedules: { nightly: { mission: 'wait', cron: '0 3 * * *', timezone: 'Europe/Paris' } },
  });
});
afterAll(async () => {
  await server.close();
});

describe('parley missions, executions, schedules', () => {
  it('lists missions and runs one, following its progress to the end', async () => {
    const list = await parley(['missions', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/MISSION\s+NAMESPACE\s+AGENT\s+LOOP/);
    expect(list.stdout).toMatch(/tidy\s+house\s+default\s+yes\s+10/);

    const run = await parley([
      'missions',
      'run',
      'tidy',
      '--input',
      '{"room": "the attic"}',
      '--follow',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^execution cli_\S+ of tidy \(session \S+\)$/);
    expect(lines).toContain('iteration 0/10 · starting (idle) · 0 tokens');
    expect(
      lines.some((line) => /^iteration 1\/10 · running \(running\) · \d+ tokens$/.test(line)),
    ).toBe(true);
    expect(
      lines.some((line) => /^iteration 2\/10 · success \(completed\) · \d+ tokens$/.test(line)),
    ).toBe(true);
    expect(lines.at(-1)).toContain('Continue the mission. This is iteration 2 of 10.');
    const tokens = lines.map((line) => Number(/· (\d+) tokens$/.exec(line)?.[1] ?? -1));
    expect(Math.max(...tokens)).toBeGreaterThan(0);

    const bad = await parley(['missions', 'run', 'tidy', '--input', '{nope']);
    expect(bad.code).toBe(2);
    const unknown = await parley(['missions', 'run', 'nothing']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('mission_not_found');
  });

  it('lists, shows and cancels executions', async () => {
    const run = await parley(['missions', 'run', 'wait']);
    expect(run.code).toBe(0);
    const id = /^execution (\S+) /.exec(run.stdout)?.[1] as string;
    await until(
      () => request(server.url, 'GET', `/api/v1/executions/${id}`),
      (answer) => answer.body.status === 'waiting',
      'the loop to wait for its delay',
    );
    const list = await parley(['executions', 'list', '--mission', 'wait']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+wait\\s+waiting\\s+idle\\s+1/10\\s+local`));
    const show = await parley(['executions', 'show', id]);
    expect(JSON.parse(show.stdout)).toMatchObject({ execution_id: id, status: 'waiting' });
    const cancel = await parley(['executions', 'cancel', id]);
    expect(cancel.stdout.trim()).toBe(`${id}: cancelled (cancelled)`);
    const none = await parley(['executions', 'list', '--status', 'waiting']);
    expect(none.stdout).not.toContain(id);
  });

  it('lists schedules with their next fire time', async () => {
    const list = await parley(['schedules', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/SCHEDULE\s+MISSION\s+CRON\s+TIMEZONE\s+NEXT FIRE\s+LAST FIRE/);
    // 03:00 in Paris is 01:00 or 02:00 UTC.
    expect(list.stdout).toMatch(
      /nightly\s+wait\s+0 3 \* \* \*\s+Europe\/Paris\s+\S+T0[12]:00:00\.000Z\s+-/,
    );
  });
});
