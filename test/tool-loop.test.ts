import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cancelTurn } from '../src/store/cancelTurn.js';
import type { Db } from '../src/store/db.js';
import { builtInTools } from '../src/tools/registry.js';
import { ToolError, type Tool } from '../src/tools/types.js';
import { openTestDb } from './support/db.js';
import { checkJournalInvariants } from './support/invariants.js';
import {
  admit,
  journal,
  runtimeConfig,
  startTestWorker,
  waitForTerminal,
  waitUntil,
  type TestWorker,
} from './support/runtime-helpers.js';

/**
 * The tool loop (RUNTIME.md, issue 8) on a real worker and database, with tools whose
 * behaviour the test controls (named like an MCP server's, `fake__…`): calls of one step
 * run concurrently up to `tools.max_concurrency`, each under its time limit; results are
 * truncated to `tools.max_result_bytes`; invalid arguments are a tool error the model
 * sees; `tool_result` carries the duration; memory writes are buffered and applied with
 * the commit, or never.
 */

let db: Db;
let closeDb: () => Promise<void>;
let worker: TestWorker | null = null;
let running = 0;
let peak = 0;
const calls: string[] = [];

const fake = (name: string, execute: Tool['execute']): Tool => ({
  name,
  description: `the ${name} test tool`,
  inputSchema: {
    type: 'object',
    properties: { id: { type: 'string' } },
    required: ['id'],
    additionalProperties: false,
  },
  source: 'mcp:fake',
  execute,
});

const tools = () => {
  const registry = builtInTools({});
  for (const tool of [
    fake('fake__slow', async (args) => {
      const { id } = args as { id: string };
      calls.push(id);
      running += 1;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setTimeout(resolve, 150));
      running -= 1;
      return { id };
    }),
    fake('fake__hang', async (_args, context) => {
      await new Promise((_resolve, reject) => {
        context.signal.addEventListener('abort', () => reject(context.signal.reason as Error));
      });
    }),
    fake('fake__big', async () => ({ text: 'x'.repeat(100_000) })),
    fake('fake__fails', async () => {
      throw new ToolError('tool_failed', 'it broke');
    }),
  ]) {
    registry.set(tool.name, tool);
  }
  return registry;
};

const workspaces = mkdtempSync(join(tmpdir(), 'parley-tool-loop-'));
const config = runtimeConfig({
  tools: { max_concurrency: 2, max_result_bytes: 2048, workspace_dir: workspaces },
  // Declared so the agent may name `fake__…` tools; this test's worker never connects to
  // it: the tools are injected into its registry directly.
  mcp_servers: { fake: { command: 'node', args: ['-e', ''] } },
  agents: {
    default: {
      tools: {
        fake__slow: 'allow',
        fake__hang: { policy: 'allow', timeout_ms: 200 },
        fake__big: 'allow',
        fake__fails: 'allow',
        remember: 'allow',
        recall: 'allow',
        calculator: 'approve',
        shell: { policy: 'allow', timeout_ms: 20_000 },
      },
    },
  },
});

beforeAll(async () => {
  ({ db, close: closeDb } = await openTestDb());
});
afterEach(async () => {
  await worker?.stop();
  worker = null;
});
afterAll(async () => {
  await checkJournalInvariants(db);
  await closeDb();
  rmSync(workspaces, { recursive: true, force: true });
});

let counter = 0;
const turnId = () => `tl_${Date.now()}_${counter++}`;

async function run(message: string, sessionId: string | null = null) {
  worker ??= await startTestWorker(db, config, 'tool-loop', tools());
  const id = turnId();
  const admitted = await admit(db, { sessionId, turnId: id, message });
  const terminal = await waitForTerminal(db, admitted.session_id, id);
  return {
    sessionId: admitted.session_id,
    turnId: id,
    terminal,
    events: await journal(db, admitted.session_id),
  };
}

describe('the tool loop', () => {
  it('runs the calls of one step concurrently, never more than max_concurrency at once', async () => {
    calls.length = 0;
    peak = 0;
    const message = ['a', 'b', 'c', 'd', 'e']
      .map((id) => `/tool fake__slow {"id": "${id}"}`)
      .join('\n');
    const { events, terminal } = await run(message);
    expect(terminal.type).toBe('done');
    expect([...calls].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(peak).toBe(2);
    const results = events.filter((event) => event.type === 'tool_result');
    expect(results).toHaveLength(5);
    for (const result of results) {
      expect(result.ok).toBe(true);
      expect(result.duration_ms).toBeGreaterThanOrEqual(100);
    }
  });

  it('stops awaiting a call at its timeout: a tool error the model sees', async () => {
    const { events, terminal } = await run('/tool fake__hang {"id": "h"}');
    expect(terminal.type).toBe('done');
    const result = events.find((event) => event.type === 'tool_result');
    expect(result).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(terminal.final_message.content).toContain('Tool fake__hang failed');
  });

  it('truncates a result over max_result_bytes with a marker', async () => {
    const { events } = await run('/tool fake__big {"id": "b"}');
    const result = events.find((event) => event.type === 'tool_result')!;
    expect(result.ok).toBe(true);
    const size = Buffer.byteLength(JSON.stringify(result.result));
    expect(size).toBeLessThanOrEqual(2048 + 200);
    expect(JSON.stringify(result.result)).toMatch(/truncated/i);
  });

  it('reports invalid arguments and a failing tool as tool errors, and goes on', async () => {
    const { events, terminal } = await run(
      '/tool fake__slow {"id": 42, "extra": true}\n/tool fake__fails {"id": "f"}',
    );
    expect(terminal.type).toBe('done');
    const results = events.filter((event) => event.type === 'tool_result');
    expect(results.map((result) => result.error?.code).sort()).toEqual([
      'invalid_arguments',
      'tool_failed',
    ]);
  });
});

describe('the shell, through the loop', () => {
  it('works in the session’s own directory, which persists across its turns', async () => {
    const first = await run('/tool shell {"command": "echo kept across turns > note.txt"}');
    expect(first.events.find((event) => event.type === 'tool_result')).toMatchObject({ ok: true });
    const second = await run('/tool shell {"command": "cat note.txt"}', first.sessionId);
    const result = second.events.filter((event) => event.type === 'tool_result').at(-1);
    expect(JSON.stringify(result)).toContain('kept across turns');
  });
});

describe('memory as buffered effects', () => {
  async function memories(): Promise<string[]> {
    const found = await db.query<{ text: string }>('select text from memories order by created_at');
    return found.rows.map((row) => row.text);
  }

  it('writes what a turn remembered with its commit, and recall sees it in the same turn', async () => {
    const { terminal } = await run('/tool remember {"text": "the customer prefers email"}');
    expect(terminal.type).toBe('done');
    expect(await memories()).toContain('the customer prefers email');
  });

  it('writes nothing for a turn that is cancelled after its remember ran', async () => {
    worker ??= await startTestWorker(db, config, 'tool-loop', tools());
    const id = turnId();
    const message =
      '/tool remember {"text": "never stored"}\n/tool calculator {"expression": "1+1"}';
    const { session_id: sessionId } = await admit(db, { turnId: id, message });
    // The remember ran (allow); the calculator waits for a person: the turn stops there.
    // The request is journaled with the step; the allowed call runs after it: wait for both.
    await waitUntil(async () => {
      const events = await journal(db, sessionId);
      return (
        events.some((event) => event.type === 'input_required') &&
        events.some((event) => event.type === 'tool_result' && event.tool === 'remember')
      );
    }, 'the approval request and the remember result');
    const row = await db.query<{ burst: any }>('select burst from sessions where session_id = $1', [
      sessionId,
    ]);
    expect(row.rows[0]?.burst.effects).toHaveLength(1);
    const cancelled = await cancelTurn(db, {
      tenant: 'default',
      sessionId,
      turnId: id,
      commandId: `${id}_cancel`,
      actor: { user: 'local', tenant: 'default' },
    });
    expect(cancelled.result).toBe('cancelled');
    const end = await waitForTerminal(db, sessionId, id);
    expect(end.type).toBe('cancelled');
    expect(await memories()).not.toContain('never stored');
  });
});
