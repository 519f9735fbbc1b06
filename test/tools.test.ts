import { columns } from '../src/cli/tools.js';
import { describe, expect, it } from 'vitest';
import { calculator, evaluate } from '../src/tools/calculator.js';
import { createClock } from '../src/tools/clock.js';
import { builtInTools, runTool, validateArguments } from '../src/tools/registry.js';
import { ToolError, type Tool } from '../src/tools/types.js';

const ctx = { signal: new AbortController().signal, timeoutMs: 1000, scope: null, options: {} };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('calculator', () => {
  // "expression = result; …" and "expression => message; …": compact tables of cases.
  const table = (text: string, sep: string) =>
    text.split(';').map((c) => c.split(sep).map((part) => part.trim()) as [string, string]);
  const values = table(
    `1 + 2 * 3 = 7; (1 + 2) * 3 = 9; 10 - 4 - 3 = 3; 2 ^ 3 ^ 2 = 512; -2 ^ 2 = -4; (-2) ^ 2 = 4;
     2 ^ -1 = 0.5; --3 + +2 = 5; 7 % 4 * 2 = 6; 1.5e3 / .5 = 3000; ( ( 2E-2 ) ) = 0.02; 0 * -1 = 0`,
    '=',
  );
  it.each(values)('%s = %s', (expression, result) => {
    expect(Object.is(evaluate(expression), Number(result))).toBe(true);
  });

  const errors = table(
    `1 / 0 => division by zero; 5 % (2 - 2) => division by zero; 1e999 => not a finite number;
     (-8) ^ (1 / 3) => not a finite number; => unexpected end of expression at position 1;
     (1 + 2 => position 7, expected ')'; 1 2 => unexpected "2" at position 3;
     process.exit() => unexpected "p" at position 1; constructor => unexpected "c" at position 1;
     2 ** 3 => unexpected "*" at position 4`,
    '=>',
  );
  const tooLong: [string, string] = ['1+'.repeat(100) + '1', 'at most 200 characters'];
  it.each([...errors, tooLong])('rejects %j: %s', (expression, message) => {
    expect(() => evaluate(expression)).toThrow(message);
    expect(() => evaluate(expression)).toThrow(
      expect.objectContaining({ name: 'ToolError', code: 'invalid_expression' }),
    );
  });
});

describe('clock', () => {
  const clock = createClock(() => new Date('2024-03-10T14:05:09.000Z'));

  it('reports UTC by default', async () => {
    for (const args of [{}, { timezone: 'UTC' }]) {
      expect(await clock.execute(args, ctx)).toEqual({
        now: '2024-03-10T14:05:09.000Z',
        timezone: 'UTC',
        local: '2024-03-10T14:05:09+00:00',
      });
    }
  });

  it('formats local time in an IANA zone, on either side of UTC', async () => {
    expect(await clock.execute({ timezone: 'Asia/Kolkata' }, ctx)).toMatchObject({
      timezone: 'Asia/Kolkata',
      local: '2024-03-10T19:35:09+05:30',
    });
    expect(await clock.execute({ timezone: 'Pacific/Honolulu' }, ctx)).toMatchObject({
      local: '2024-03-10T04:05:09-10:00',
    });
  });

  it('rejects an unknown zone, a wrong type and unknown arguments', async () => {
    for (const args of [{ timezone: 'Mars/Olympus' }, { timezone: 3 }, { zone: 'UTC' }, null]) {
      await expect(clock.execute(args, ctx)).rejects.toMatchObject({ code: 'invalid_arguments' });
    }
  });
});

describe('validateArguments and builtInTools', () => {
  it('holds the built-in tools by name, with closed schemas', () => {
    const tools = builtInTools();
    expect([...tools.keys()].sort()).toEqual([
      'a2a',
      'calculator',
      'clock',
      'forget',
      'generate_image',
      'http_fetch',
      'load_skill',
      'recall',
      'remember',
      'shell',
      'show_panel',
      'update_panel',
      'update_state',
    ]);
    for (const tool of tools.values()) expect(tool.inputSchema.additionalProperties).toBe(false);
  });

  it.each([
    [[], 'must be a JSON object'],
    [{}, 'missing required argument "expression"'],
    [{ expression: 1 }, 'must be a string'],
    [{ expression: '1', toString: 'x' }, 'unknown argument "toString"'],
    [{ expression: 'x'.repeat(201) }, 'at most 200 characters'],
  ])('rejects arguments %j', (args, message) => {
    const error = validateArguments(calculator, args);
    expect(error).toBeInstanceOf(ToolError);
    expect(error?.code).toBe('invalid_arguments');
    expect(error?.message).toContain(message);
  });

  it('checks finite numbers and accepts fitting arguments', () => {
    const tool = fake(async () => 0, { n: { type: 'number' } });
    expect(validateArguments(tool, { n: 2 })).toBeUndefined();
    expect(validateArguments(tool, { n: '2' })?.code).toBe('invalid_arguments');
    expect(validateArguments(tool, { n: Number.NaN })?.code).toBe('invalid_arguments');
  });
});

function fake(execute: Tool['execute'], properties: Tool['inputSchema']['properties'] = {}): Tool {
  const inputSchema = { type: 'object', properties, required: [], additionalProperties: false };
  return { name: 'fake', description: 'test', inputSchema: inputSchema as never, execute };
}

describe('runTool', () => {
  const opts = (timeoutMs = 1000, signal = ctx.signal) => ({ signal, timeoutMs, graceMs: 10 });

  it('returns results and failures as values, never throwing or leaking details', async () => {
    const calc = builtInTools().get('calculator')!;
    const ok = await runTool(calc, { expression: '2^10' }, opts());
    expect(ok).toMatchObject({ ok: true, result: { expression: '2^10', result: 1024 } });
    const rejects = fake(() => Promise.reject(new Error('secret /home/x')));
    const throws = fake(() => { throw new TypeError('sync'); }); // prettier-ignore
    const failures = [
      await runTool(calc, { expression: '1/0' }, opts()),
      await runTool(calc, { expr: '1' }, opts()),
      await runTool(rejects, {}, opts()),
      await runTool(throws, {}, opts()),
    ];
    const codes = failures.map((f) => (f.ok ? 'ok' : f.error.code)).join(' ');
    expect(codes).toBe('invalid_expression invalid_arguments tool_failed tool_failed');
    expect(JSON.stringify(failures)).not.toMatch(/secret|sync|stack|\.ts/);
  });

  it('stops awaiting a slow tool at the timeout and signals it, without killing it', async () => {
    let seen: AbortSignal | undefined;
    let finished = false;
    const slow = fake(async (_args, { signal }) => {
      seen = signal;
      await sleep(300);
      finished = true;
      throw new Error('a late failure must not become an unhandled rejection');
    });
    const started = Date.now();
    const outcome = await runTool(slow, {}, opts(30));
    expect(outcome).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(Date.now() - started).toBeLessThan(250);
    expect([seen?.aborted, finished]).toEqual([true, false]);
    await sleep(400);
    expect(finished).toBe(true);
  });

  it("reports the caller's abort, before or during execution", async () => {
    const hang = fake(() => new Promise(() => undefined));
    const aborted = { ok: false, error: { code: 'aborted' } };
    expect(await runTool(hang, {}, opts(1000, AbortSignal.abort()))).toMatchObject(aborted);
    const during = new AbortController();
    setTimeout(() => during.abort(), 10);
    expect(await runTool(hang, {}, opts(1000, during.signal))).toMatchObject(aborted);
  });
});

describe('parley tools list columns', () => {
  it('widen to the longest cell, so a long tool name never runs into its source', () => {
    const long = 'orders__look_up_every_order_of_a_customer_by_email';
    const lines = columns([
      ['TOOL', 'SOURCE', 'POLICY', 'AVAILABLE'],
      [long, 'mcp:orders', 'approve', 'no'],
      ['clock', 'built-in', 'allow', 'yes'],
    ]);
    expect(lines[1]).toBe(`${long}  mcp:orders  approve  no`);
    expect(lines[2]?.indexOf('built-in')).toBe(long.length + 2);
    expect(lines[0]?.indexOf('SOURCE')).toBe(long.length + 2);
  });
});
