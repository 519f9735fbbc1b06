import { describe, expect, it } from 'vitest';
import { compileConfig, ConfigError } from '../src/config/load.js';
import { fireTimesBetween, parseCron } from '../src/missions/cron.js';
import { renderMissionPrompt } from '../src/missions/input.js';

// The `missions` and `schedules` keys (CONFIG.md): compiled once, checked at start with
// messages that name the key.
const base = { agents: { default: {}, reviewer: {} } };

function compile(extra: Record<string, unknown>) {
  return compileConfig({ ...base, ...extra }, {}, 'test');
}

describe('missions in the configuration', () => {
  it('compiles a loop mission with defaults', () => {
    const config = compile({
      missions: { nightly: { prompt: 'Summarise.', loop_prompt: '/decide continue:3' } },
    });
    expect(config.missions.nightly).toEqual({
      name: 'nightly',
      namespace: 'default',
      agent: 'default',
      prompt: 'Summarise.',
      loopPrompt: '/decide continue:3',
      maxIterations: 10,
      loopDelaySeconds: 0,
      inputSchema: null,
      interruptTo: null,
      priority: 'normal',
      timeoutSeconds: null,
      approvalTimeoutMs: null,
      onTimeout: null,
    });
    expect(config.limits.missionIterations).toBe(100);
  });

  it('compiles a mission’s approval_timeout_ms and on_timeout', () => {
    const config = compile({
      missions: { pay: { prompt: 'Pay.', approval_timeout_ms: 60_000, on_timeout: 'approve' } },
    });
    expect(config.missions.pay).toMatchObject({ approvalTimeoutMs: 60_000, onTimeout: 'approve' });
    expect(() => compile({ missions: { pay: { prompt: 'Pay.', on_timeout: 'run' } } })).toThrow(
      'missions.pay.on_timeout',
    );
    expect(() =>
      compile({ missions: { pay: { prompt: 'Pay.', approval_timeout_ms: -1 } } }),
    ).toThrow('missions.pay.approval_timeout_ms');
  });

  it.each([
    [{ x: { prompt: 'p', agent: 'nobody' } }, 'missions.x.agent: no agent named "nobody"'],
    [{ x: { prompt: 'p', max_iterations: 101 } }, 'missions.x.max_iterations: at most 100'],
    [{ x: { prompt: 'p', interrupt_to: 'agent:ghost' } }, 'missions.x.interrupt_to: no agent'],
    [{ x: { prompt: 'p', interrupt_to: 'someone' } }, 'missions.x.interrupt_to'],
    [{ x: { prompt: 'p', input_schema: { type: 'nonsense' } } }, 'missions.x.input_schema'],
    [{ 'bad name': { prompt: 'p' } }, 'missions.bad name'],
    [{ x: { prompt: '' } }, 'missions.x.prompt'],
  ])('refuses a bad mission (%#)', (missions, message) => {
    expect(() => compile({ missions })).toThrow(ConfigError);
    expect(() => compile({ missions })).toThrow(message);
  });

  it('compiles schedules and checks cron, time zone, mission and input', () => {
    const missions = {
      report: {
        prompt: 'Report on {{region}}.',
        input_schema: {
          type: 'object',
          properties: { region: { type: 'string' } },
          required: ['region'],
        },
      },
    };
    const config = compile({
      missions,
      schedules: {
        nightly: {
          mission: 'report',
          cron: '0 3 * * *',
          timezone: 'Europe/Paris',
          input: { region: 'eu' },
        },
      },
    });
    expect(config.schedules.nightly).toMatchObject({
      tenant: 'default',
      user: 'scheduler',
      overlap: 'skip',
      catchUp: 'one',
    });
    const bad = (schedule: Record<string, unknown>) => () =>
      compile({
        missions,
        schedules: {
          s: { mission: 'report', cron: '0 3 * * *', input: { region: 'x' }, ...schedule },
        },
      });
    expect(bad({ cron: '61 * * * *' })).toThrow('schedules.s.cron: not a cron expression');
    expect(bad({ timezone: 'Mars/Olympus' })).toThrow('schedules.s.timezone: unknown time zone');
    expect(bad({ mission: 'nope' })).toThrow('schedules.s.mission: no mission named "nope"');
    expect(bad({ input: {} })).toThrow('schedules.s.input: missing required input "region"');
    expect(bad({ overlap: 'sometimes' })).toThrow('schedules.s.overlap');
  });
});

describe('cron fire times', () => {
  it('follows the time zone, daylight saving included', () => {
    const paris = parseCron('0 3 * * *', 'Europe/Paris');
    // 3:00 in Paris is 2:00 UTC in winter and 1:00 UTC in summer (DST began 2026-03-29).
    expect(paris.next(new Date('2026-03-27T12:00:00Z'))?.toISOString()).toBe(
      '2026-03-28T02:00:00.000Z',
    );
    expect(paris.next(new Date('2026-03-28T12:00:00Z'))?.toISOString()).toBe(
      '2026-03-29T01:00:00.000Z',
    );
  });

  it('lists the fire times of an interval, keeping the newest past a limit', () => {
    const hourly = parseCron('0 * * * *', 'UTC');
    const from = new Date('2026-01-01T00:00:00Z');
    const to = new Date('2026-01-01T05:30:00Z');
    expect(fireTimesBetween(hourly, from, to, 100).map((time) => time.getUTCHours())).toEqual([
      1, 2, 3, 4, 5,
    ]);
    expect(fireTimesBetween(hourly, from, to, 2).map((time) => time.getUTCHours())).toEqual([4, 5]);
  });
});

describe('mission prompts', () => {
  it('fills placeholders, or appends an input no placeholder names', () => {
    expect(renderMissionPrompt('Report on {{region}}.', { region: 'eu' })).toBe('Report on eu.');
    expect(renderMissionPrompt('Report.', { region: 'eu' })).toBe(
      'Report.\n\nInput: {"region":"eu"}',
    );
    expect(renderMissionPrompt('Report.', {})).toBe('Report.');
  });
});
