import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { newEvent } from '../src/protocol/events.js';
import { claimSession } from '../src/store/claimSession.js';
import { saveBurst } from '../src/store/saveBurst.js';
import { startAttempt } from '../src/store/startAttempt.js';
import type { BurstState, Lease, SessionRow } from '../src/store/types.js';
import { builtInTools } from '../src/tools/registry.js';
import { NeedsAuthorization, type Reconciled, type Tool } from '../src/tools/types.js';
import { checkJournalInvariants } from './support/invariants.js';
import {
  journal,
  startTestWorker,
  waitForLeaseExpiry,
  waitForTerminal,
  waitUntil,
  type SeenEvent,
  type TestWorker,
} from './support/runtime-helpers.js';
import { request, startTestServer, type TestServer } from './support/server.js';

/**
 * Interruptions (docs/governance.md), on both engines, with a real worker and the HTTP API:
 *
 * - reconciliation: the state a worker killed inside a non-idempotent call leaves (the
 *   call saved `running`, its lease run out) is built by hand, as a dead worker would
 *   have written it; the next worker asks the tool's `reconcile`, then (`on_unknown:
 *   ask`) a person, and runs the call again only when it did not happen. The same with
 *   real SIGKILLs: reconciliation.postgres.test.ts.
 * - external_auth: a tool without the user's credential throws NeedsAuthorization; the
 *   request carries the provider and URL; the answer stores a reference that the resumed
 *   call (and later ones) read, and that appears in no event.
 */

const alice = { authorization: 'Bearer alice-key' };
const carol = { authorization: 'Bearer carol-key' };
const ops = { authorization: 'Bearer ops-key' };

let server: TestServer;
let worker: TestWorker | null = null;
let counter = 0;

/** What the charge tool did, by id: its external ledger. */
const charged = new Map<string, number>();
/** What its reconcile answers, by id (default unknown). */
const verdicts = new Map<string, Reconciled>();
/** The credential references the mail tool was given. */
const seenReferences: string[] = [];

const schema = {
  type: 'object' as const,
  properties: { id: { type: 'string' as const } },
  required: ['id'],
  additionalProperties: false,
};

const tools = () => {
  const registry = builtInTools({});
  const charge: Tool = {
    name: 'fake__charge',
    description: 'charges a card once per call (test)',
    inputSchema: schema,
    source: 'mcp:fake',
    execute: async (args) => {
      const { id } = args as { id: string };
      charged.set(id, (charged.get(id) ?? 0) + 1);
      return { charged: id };
    },
    reconcile: async (args) => verdicts.get((args as { id: string }).id) ?? 'unknown',
  };
  const { reconcile: _reconcile, ...withoutReconcile } = charge;
  const plain: Tool = { ...withoutReconcile, name: 'fake__plain' };
  const needsAccess = (name: string, provider: string): Tool => ({
    name,
    description: `sends through ${provider} (test)`,
    inputSchema: schema,
    source: 'mcp:fake',
    execute: async (args, context) => {
      const reference = (await context.credentials?.get(provider)) ?? null;
      if (reference === null) {
        throw new NeedsAuthorization({
          provider,
          url: `https://auth.example/${provider}/authorize?client=parley`,
          scope: 'send',
        });
      }
      seenReferences.push(reference);
      return { sent: (args as { id: string }).id };
    },
  });
  // Records what it started in its receipt; a run after a crash follows that instead.
  const job: Tool = {
    name: 'fake__job',
    description: 'starts a job elsewhere and records its id (test)',
    inputSchema: schema,
    source: 'mcp:fake',
    execute: async (args, context) => {
      const { id } = args as { id: string };
      const receipt = context.scope?.receipt;
      if (!receipt) throw new Error('no receipt');
      if (receipt.value) return { followed: receipt.value.job };
      await receipt.record(id === 'big' ? { job: 'x'.repeat(5000) } : { job: id });
      const saved = await server.db.query<{ burst: BurstState }>(
        'select burst from sessions where session_id = $1',
        [context.scope?.sessionId],
      );
      const call = saved.rows[0]?.burst.steps.flatMap((step) => step.calls)[0];
      return { started: id, saved_receipt: call?.receipt ?? null };
    },
    reconcile: (_args, context) =>
      Promise.resolve(context.scope?.receipt?.value ? 'not_done' : 'unknown'),
  };
  for (const tool of [charge, plain, job, needsAccess('fake__mail', 'mailhub')]) {
    registry.set(tool.name, tool);
  }
  registry.set('fake__files', needsAccess('fake__files', 'filehub'));
  return registry;
};

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: [] },
          { key_env: 'K_CAROL', tenant: 'acme', user: 'carol', roles: [] },
          { key_env: 'K_OPS', tenant: 'acme', user: 'ops', roles: ['admin'] },
        ],
      },
      // Declared so agents may name `fake__…` tools; the tools themselves are the test's.
      mcp_servers: { fake: { command: 'node', args: ['-e', ''] } },
      agents: {
        default: {
          model: 'demo/echo',
          tools: {
            fake__charge: { policy: 'allow', on_unknown: 'ask' },
            fake__plain: { policy: 'allow', on_unknown: 'ask' },
            fake__job: 'allow',
            fake__mail: 'allow',
            fake__files: 'allow',
          },
        },
        // Today's behaviour: a call whose result is unknown is recorded as interrupted.
        silent: { model: 'demo/echo', tools: { fake__plain: 'allow', fake__charge: 'allow' } },
      },
    },
    { K_ALICE: 'alice-key', K_CAROL: 'carol-key', K_OPS: 'ops-key' },
    { api: true, worker: false },
  );
});
afterEach(async () => {
  await worker?.stop();
  worker = null;
});
afterAll(async () => {
  if (server) {
    await checkJournalInvariants(server.db);
    await server.close();
  }
});

async function admit(message: string, options: { sessionId?: string; agent?: string } = {}) {
  const turnId = `int_${Date.now()}_${counter++}`;
  const response = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    {
      turn_id: turnId,
      message,
      ...(options.sessionId ? { session_id: options.sessionId } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
    },
    alice,
  );
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  return { sessionId: response.body.session_id as string, turnId };
}

const answer = (sessionId: string, requestId: string, body: Record<string, unknown>, who = alice) =>
  request(server.url, 'POST', `/api/v1/chat/sessions/${sessionId}/inputs/${requestId}`, body, who);

/** Everything the workers logged, at every level: searched for credential references. */
let logged = '';
const logSink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    logged += chunk.toString();
    done();
  },
});

async function startWorker(): Promise<TestWorker> {
  worker ??= await startTestWorker(
    server.db,
    server.config,
    'interruptions',
    tools(),
    createLogger({ level: 'trace', destination: logSink }),
  );
  return worker;
}

async function requested(sessionId: string, count = 1): Promise<SeenEvent> {
  let found: SeenEvent[] = [];
  await waitUntil(async () => {
    found = (await journal(server.db, sessionId)).filter(
      (event) => event.type === 'input_required',
    );
    return found.length >= count;
  }, `input request ${count} of ${sessionId}`);
  return found[count - 1] as SeenEvent;
}

/**
 * What a worker SIGKILLed inside the call leaves: the turn started, the model step with
 * its `tool_call` journaled, the call saved `running`, and a lease that runs out (here
 * at once, when the test says: `expireLease`).
 */
async function crashInsideCall(
  sessionId: string,
  tool: string,
  id: string,
  receipt?: Record<string, unknown>,
): Promise<string> {
  const claimed = (await claimSession(server.db, {
    token: `crashed_${id}`,
    owner: `crashed_${id}`,
    ttlMs: 600_000,
    maxTurns: 50,
  })) as SessionRow & { queued: { turn_id: string }[] };
  expect(claimed?.session_id).toBe(sessionId);
  const lease: Lease = {
    sessionId,
    tenant: claimed.tenant,
    token: claimed.lease_token as string,
  };
  const turnIds = claimed.queued.map((turn) => turn.turn_id);
  const lead = turnIds[0] as string;
  await startAttempt(server.db, lease, {
    turnIds,
    attempt: claimed.attempt + 1,
    resetPrevious: false,
    seenSequence: null,
    historyBefore: 0,
    historyLimit: 0,
    historyBytes: 0,
  });
  const callId = `call_${id}`;
  const burst: BurstState = {
    lead,
    turn_ids: turnIds,
    base_turn_ids: turnIds,
    steps: [
      {
        kind: 'model',
        text: '',
        calls: [
          {
            call_id: callId,
            tool,
            arguments: { id },
            policy: 'allow',
            status: 'running',
            ...(receipt ? { receipt } : {}),
          },
        ],
      },
    ],
    budget: { iterations: 8, tool_calls: 16 },
  };
  await saveBurst(server.db, lease, burst, {
    events: [newEvent('tool_call', lead, { call_id: callId, tool, arguments: { id } })],
  });
  return callId;
}

/** The dead worker's lease runs out. */
async function expireLease(sessionId: string): Promise<void> {
  await server.db.query(
    `update sessions set lease_expires_at = now() - interval '1 second' where session_id = $1`,
    [sessionId],
  );
  await waitForLeaseExpiry(server.db, sessionId);
}

const resultOf = (events: SeenEvent[], callId: string) =>
  events.filter((event) => event.type === 'tool_result' && event.call_id === callId);

describe('reconciliation: a call whose result a crash lost', () => {
  it('asks a person (on_unknown: ask); "it happened" does not run it again', async () => {
    const { sessionId, turnId } = await admit('/tool fake__charge {"id": "r1"}');
    const callId = await crashInsideCall(sessionId, 'fake__charge', 'r1');
    // The dead worker's call had its effect.
    charged.set('r1', 1);
    await expireLease(sessionId);
    await startWorker();
    const required = await requested(sessionId);
    expect(required).toMatchObject({
      kind: 'reconciliation',
      call_id: callId,
      tool: 'fake__charge',
      arguments: { id: 'r1' },
      prompt: 'Did this call take effect?',
    });
    const inbox = await request(server.url, 'GET', '/api/v1/inputs?state=pending', undefined, ops);
    expect(inbox.body.items).toContainEqual(
      expect.objectContaining({
        request_id: required.request_id,
        kind: 'reconciliation',
        call_id: callId,
        tool: 'fake__charge',
        provider: null,
        url: null,
      }),
    );
    // A credential is for external_auth only: nothing is written.
    const misplaced = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
      credential_ref: 'vault:nothing',
    });
    expect(misplaced.status).toBe(400);
    expect(misplaced.body.error).toBe('invalid_request');

    const ok = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: true,
    });
    expect(ok.status).toBe(200);
    const done = await waitForTerminal(server.db, sessionId, turnId);
    expect(done.type).toBe('done');
    expect(charged.get('r1')).toBe(1);
    const events = await journal(server.db, sessionId);
    const results = resultOf(events, callId);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      ok: true,
      result: { took_effect: true, result: null, confirmed_by: 'alice' },
    });
    expect(done.final_message.content).toContain('took_effect');
  });

  it('"it did not happen" runs the call again, once', async () => {
    const { sessionId, turnId } = await admit('/tool fake__plain {"id": "r2"}');
    const callId = await crashInsideCall(sessionId, 'fake__plain', 'r2');
    await expireLease(sessionId);
    await startWorker();
    const required = await requested(sessionId);
    expect(required).toMatchObject({ kind: 'reconciliation', tool: 'fake__plain' });
    const ok = await answer(sessionId, required.request_id, {
      expected_sequence: required.sequence,
      approved: false,
    });
    expect(ok.status).toBe(200);
    expect((await waitForTerminal(server.db, sessionId, turnId)).type).toBe('done');
    expect(charged.get('r2')).toBe(1);
    const results = resultOf(await journal(server.db, sessionId), callId);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ ok: true, result: { charged: 'r2' } });
  });

  it("asks the tool's reconcile first: done and not_done ask nobody", async () => {
    verdicts.set('r3', 'done');
    verdicts.set('r4', 'not_done');
    const first = await admit('/tool fake__charge {"id": "r3"}');
    const r3 = await crashInsideCall(first.sessionId, 'fake__charge', 'r3');
    const second = await admit('/tool fake__charge {"id": "r4"}');
    const r4 = await crashInsideCall(second.sessionId, 'fake__charge', 'r4');
    await expireLease(first.sessionId);
    await expireLease(second.sessionId);
    await startWorker();
    expect((await waitForTerminal(server.db, first.sessionId, first.turnId)).type).toBe('done');
    expect((await waitForTerminal(server.db, second.sessionId, second.turnId)).type).toBe('done');
    const firstEvents = await journal(server.db, first.sessionId);
    const secondEvents = await journal(server.db, second.sessionId);
    for (const events of [firstEvents, secondEvents]) {
      expect(events.some((event) => event.type === 'input_required')).toBe(false);
    }
    expect(charged.get('r3')).toBeUndefined();
    expect(resultOf(firstEvents, r3)[0]).toMatchObject({
      ok: true,
      result: { took_effect: true, confirmed_by: "the tool's reconcile check" },
    });
    expect(charged.get('r4')).toBe(1);
    expect(resultOf(secondEvents, r4)[0]).toMatchObject({ ok: true, result: { charged: 'r4' } });
  });

  it('records the call as interrupted under the default on_unknown, reconcile unsure', async () => {
    verdicts.set('r5', 'unknown');
    const { sessionId, turnId } = await admit('/tool fake__charge {"id": "r5"}', {
      agent: 'silent',
    });
    const callId = await crashInsideCall(sessionId, 'fake__charge', 'r5');
    await expireLease(sessionId);
    await startWorker();
    expect((await waitForTerminal(server.db, sessionId, turnId)).type).toBe('done');
    const events = await journal(server.db, sessionId);
    expect(events.some((event) => event.type === 'input_required')).toBe(false);
    expect(charged.get('r5')).toBeUndefined();
    expect(resultOf(events, callId)[0]).toMatchObject({
      ok: false,
      error: { code: 'interrupted' },
    });
  });
});

describe('receipts: what a call records about work it started elsewhere', () => {
  it('is saved with the call before record() resolves', async () => {
    await startWorker();
    const { sessionId, turnId } = await admit('/tool fake__job {"id": "j1"}');
    expect((await waitForTerminal(server.db, sessionId, turnId)).type).toBe('done');
    const results = (await journal(server.db, sessionId)).filter(
      (event) => event.type === 'tool_result',
    );
    expect(results[0]).toMatchObject({
      ok: true,
      result: { started: 'j1', saved_receipt: { job: 'j1' } },
    });
  });

  it('comes back to reconcile and to the run after a crash, which follows it', async () => {
    const { sessionId, turnId } = await admit('/tool fake__job {"id": "j2"}');
    const callId = await crashInsideCall(sessionId, 'fake__job', 'j2', { job: 'remote-7' });
    await expireLease(sessionId);
    await startWorker();
    expect((await waitForTerminal(server.db, sessionId, turnId)).type).toBe('done');
    const events = await journal(server.db, sessionId);
    expect(events.some((event) => event.type === 'input_required')).toBe(false);
    expect(resultOf(events, callId)[0]).toMatchObject({
      ok: true,
      result: { followed: 'remote-7' },
    });
  });

  it('refuses a receipt over 4 KiB as too_large', async () => {
    await startWorker();
    const { sessionId, turnId } = await admit('/tool fake__job {"id": "big"}');
    expect((await waitForTerminal(server.db, sessionId, turnId)).type).toBe('done');
    const results = (await journal(server.db, sessionId)).filter(
      (event) => event.type === 'tool_result',
    );
    expect(results[0]).toMatchObject({ ok: false, error: { code: 'too_large' } });
  });
});

describe('external_auth: a tool that needs a user’s credential', () => {
  const reference = 'vault:secret/data/alice/mailhub#token';

  it('asks with the URL, stores only the reference, and resumes the call with it', async () => {
    await startWorker();
    const { sessionId, turnId } = await admit('/tool fake__mail {"id": "m1"}');
    const required = await requested(sessionId);
    expect(required).toMatchObject({
      kind: 'external_auth',
      tool: 'fake__mail',
      provider: 'mailhub',
      url: 'https://auth.example/mailhub/authorize?client=parley',
      scope: 'send',
    });
    const events = await journal(server.db, sessionId);
    expect(events.some((event) => event.type === 'tool_result')).toBe(false);
    const inbox = await request(
      server.url,
      'GET',
      '/api/v1/inputs?state=pending',
      undefined,
      alice,
    );
    expect(inbox.body.items).toContainEqual(
      expect.objectContaining({
        request_id: required.request_id,
        kind: 'external_auth',
        provider: 'mailhub',
        url: 'https://auth.example/mailhub/authorize?client=parley',
      }),
    );
    const projection = await request(
      server.url,
      'GET',
      `/api/v1/chat/sessions/${sessionId}`,
      undefined,
      alice,
    );
    expect(projection.body.pending_input).toMatchObject({
      kind: 'external_auth',
      provider: 'mailhub',
    });

    const body = { expected_sequence: required.sequence, approved: true };
    // An approval names the credential; bad input writes nothing.
    const missing = await answer(sessionId, required.request_id, body);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    const spaced = await answer(sessionId, required.request_id, {
      ...body,
      credential_ref: 'has spaces',
    });
    expect(spaced.status).toBe(400);
    // Another user may not bind a credential to alice's calls (an admin may).
    const other = await answer(
      sessionId,
      required.request_id,
      { ...body, credential_ref: 'vault:carol' },
      carol,
    );
    expect(other.status).toBe(403);
    const stored = await server.db.query('select 1 from credentials');
    expect(stored.rowCount).toBe(0);

    const ok = await answer(sessionId, required.request_id, { ...body, credential_ref: reference });
    expect(ok.status).toBe(200);
    const done = await waitForTerminal(server.db, sessionId, turnId);
    expect(done.type).toBe('done');
    expect(seenReferences).toEqual([reference]);
    const after = await journal(server.db, sessionId);
    expect(after.find((event) => event.type === 'input_resolved')).toMatchObject({
      request_id: required.request_id,
      approved: true,
      credential_provided: true,
    });
    expect(after.filter((event) => event.type === 'tool_result')).toEqual([
      expect.objectContaining({ ok: true, result: { sent: 'm1' } }),
    ]);
    const row = await server.db.query<{ user_name: string; provider: string }>(
      'select tenant, user_name, provider, credential_ref from credentials',
    );
    expect(row.rows).toEqual([
      {
        tenant: 'acme',
        user_name: 'alice',
        provider: 'mailhub',
        credential_ref: reference,
      },
    ]);
    // The reference is nowhere in the journal, nor in the request's stored answer.
    const everything = await server.db.query<{ payload: unknown }>(
      'select payload from events where session_id = $1',
      [sessionId],
    );
    expect(everything.rowCount).toBeGreaterThan(0);
    expect(JSON.stringify(everything.rows)).not.toContain('vault:');
    expect(JSON.stringify(after)).not.toContain('vault:');
    const requests = await server.db.query('select * from input_requests where session_id = $1', [
      sessionId,
    ]);
    expect(JSON.stringify(requests.rows)).not.toContain('vault:');
    expect(logged.length).toBeGreaterThan(0);
    expect(logged).not.toContain('vault:');

    // A later call reuses the stored reference without asking.
    const next = await admit('/tool fake__mail {"id": "m2"}', { sessionId });
    expect((await waitForTerminal(server.db, sessionId, next.turnId)).type).toBe('done');
    const later = await journal(server.db, sessionId);
    expect(later.filter((event) => event.type === 'input_required')).toHaveLength(1);
    expect(seenReferences).toEqual([reference, reference]);
  });

  it('a refusal tells the model access was not granted; nothing ran', async () => {
    await startWorker();
    const { sessionId, turnId } = await admit('/tool fake__files {"id": "f1"}');
    const required = await requested(sessionId);
    expect(required).toMatchObject({ kind: 'external_auth', provider: 'filehub' });
    const refused = await answer(
      sessionId,
      required.request_id,
      { expected_sequence: required.sequence, approved: false, credential_ref: 'vault:x' },
      alice,
    );
    expect(refused.status).toBe(400);
    const ok = await answer(
      sessionId,
      required.request_id,
      { expected_sequence: required.sequence, approved: false },
      carol,
    );
    expect(ok.status).toBe(200);
    expect((await waitForTerminal(server.db, sessionId, turnId)).type).toBe('done');
    const events = await journal(server.db, sessionId);
    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      ok: false,
      error: { code: 'authorization_refused' },
    });
    const stored = await server.db.query("select 1 from credentials where provider = 'filehub'");
    expect(stored.rowCount).toBe(0);
  });
});
