import { describe, expect, it } from 'vitest';
import { render } from '../src/adapters/delivery/render.js';
import { decodeApprovalId, encodeApprovalId } from '../src/ai-sdk/approvals.js';
import { compileConfig } from '../src/config/load.js';
import { reconcileCall, runTool } from '../src/tools/run.js';
import { NeedsAuthorization, ToolError, type Tool } from '../src/tools/types.js';

// The database-free parts of the interruptions (docs/governance.md): the `on_unknown` key,
// a tool's NeedsAuthorization and `reconcile` as the runner sees them, the AI SDK approval
// id of the new kinds, and the web app's cards for them.

const tool = (overrides: Partial<Tool>): Tool => ({
  name: 'fake__pay',
  description: 'test',
  inputSchema: { type: 'object' },
  execute: async () => ({ paid: true }),
  ...overrides,
});
const run = { signal: new AbortController().signal, timeoutMs: 1000 };

describe('the on_unknown key', () => {
  it('compiles interrupted (the default) and ask, and refuses anything else by name', () => {
    const agents = compileConfig({
      agents: {
        a: { tools: { clock: { policy: 'allow', on_unknown: 'ask' }, calculator: 'allow' } },
      },
    }).agents;
    expect(agents.a?.tools.clock?.onUnknown).toBe('ask');
    expect(agents.a?.tools.calculator?.onUnknown).toBe('interrupted');
    expect(() =>
      compileConfig({ agents: { a: { tools: { clock: { on_unknown: 'guess' } } } } }),
    ).toThrow('agents.a.tools.clock');
  });
});

describe('the tool runner', () => {
  it('reports NeedsAuthorization as needs_authorization with what to ask for', async () => {
    const outcome = await runTool(
      tool({
        execute: async (_args, context) => {
          if ((await context.credentials?.get('bank')) == null) {
            throw new NeedsAuthorization({ provider: 'bank', url: 'https://bank.example/auth' });
          }
          return 'paid';
        },
      }),
      {},
      run,
    );
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'needs_authorization' },
      authorization: { provider: 'bank', url: 'https://bank.example/auth', scope: null },
    });
    const granted = await runTool(
      tool({
        execute: async (_args, context) => context.credentials?.get('bank'),
      }),
      {},
      { ...run, credentials: { get: async () => 'vault:bank' } },
    );
    expect(granted).toMatchObject({ ok: true, result: 'vault:bank' });
  });

  it("asks a tool's reconcile; none, a throw or nonsense is unknown", async () => {
    expect(await reconcileCall(tool({}), {}, run)).toBe('unknown');
    expect(await reconcileCall(tool({ reconcile: async () => 'done' }), {}, run)).toBe('done');
    expect(await reconcileCall(tool({ reconcile: async () => 'not_done' }), {}, run)).toBe(
      'not_done',
    );
    const broken = tool({
      reconcile: async () => {
        throw new ToolError('unavailable', 'ledger down');
      },
    });
    expect(await reconcileCall(broken, {}, run)).toBe('unknown');
    const odd = tool({ reconcile: async () => 'maybe' as never });
    expect(await reconcileCall(odd, {}, run)).toBe('unknown');
  });
});

describe('the AI SDK approval id', () => {
  it('carries the new kinds', () => {
    for (const kind of ['reconciliation', 'external_auth'] as const) {
      const ref = { requestId: 'req_1', expectedSequence: 9, kind, turnId: 't1' };
      expect(decodeApprovalId(encodeApprovalId(ref))).toEqual(ref);
    }
  });
});

describe('the chat platforms’ interruption cards', () => {
  const card = (kind: 'reconciliation' | 'external_auth', resolution?: { approved: boolean }) =>
    JSON.stringify(
      render('rep_1', {
        type: 'approval',
        kind,
        request_id: 'req_1',
        expected_sequence: 4,
        tool: 'pay',
        arguments: { amount: 12 },
        prompt: kind === 'reconciliation' ? 'Did this call take effect?' : 'Access to bank',
        ...(resolution ? { resolution: { ...resolution, actor: 'ann' } } : {}),
      }),
    );

  it('asks whether a call took effect with buttons that say what they do', () => {
    const open = card('reconciliation');
    expect(open).toContain('Yes, it happened');
    expect(open).toContain('No, run it again');
    expect(open).toContain('amount');
    expect(open).not.toContain('Reject');
    expect(card('reconciliation', { approved: false })).toContain('It did not happen, says ann');
  });

  it('sends an external_auth to the web app, with no button', () => {
    const open = card('external_auth');
    expect(open).toContain('Answer in the web app');
    expect(open).not.toContain('Approve');
    expect(open).not.toContain('Reject');
  });
});
