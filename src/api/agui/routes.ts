import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../../config/types.js';
import { ParleyError } from '../../errors.js';
import { createThreadSession, findThreadSession } from '../../store/agUiThreads.js';
import { findInputRequest } from '../../store/findInputRequest.js';
import { findVisibleSession } from '../../store/findVisibleSession.js';
import { lastRunStart } from '../../store/lastRunStart.js';
import { routeOptions, typed } from '../contract.js';
import { agentsOf, type ApiDeps } from '../deps.js';
import { JournalFeed } from '../feed.js';
import { answerForPrincipal } from '../inputs.js';
import { JournalFollower } from '../journalFollower.js';
import { viewerOf } from '../sessionAccess.js';
import { AdapterStreams } from '../adapterStreams.js';
import { isStorableText } from '../validate.js';
import { StreamSlots } from '../streamSlots.js';
import { admitForPrincipal, checkMessage, clientToolsFor } from '../turns.js';
import { answerClientToolOutputs } from '../clientToolOutputs.js';
import { toolOutputsOf } from './toolOutputs.js';
import { aguiContracts, type runInput } from './contracts.js';
import { answerOf, instructionsOf, lastUserMessage } from './runInput.js';
import { checkClientState, clientStateGuard } from './clientState.js';
import { AgUiFold, type AgUiFrame } from './fold.js';
import { AgUiMessages } from './messages.js';
import { acceptsProtobuf, serveAgUi, type AgUiOutput } from './transport.js';

type RunInput = z.output<typeof runInput>;

/**
 * AG-UI (docs/protocols.md): an adapter over Parley's admission, journal, approvals and
 * cancel — the same tenancy, roles and durability as Parley's own routes. Errors before a
 * stream starts answer in Parley's shape; a run's failure is its RUN_ERROR event.
 */
export async function aguiPlugin(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const feed = new JournalFeed(deps.db, deps.wakeups, deps.config.runtime.pollMs);
  const slots = new StreamSlots(deps.config.limits.streamsPerPrincipal);
  const streams = new AdapterStreams({
    keepaliveMs: deps.config.server.keepaliveMs,
    bufferBytes: deps.config.limits.streamBufferBytes,
  });
  app.addHook('onClose', async () => {
    feed.stop();
    streams.closeAll();
  });
  const api = typed(app);
  const { run, thread } = aguiContracts;

  api.post(run.url, routeOptions(run), async (request, reply) => {
    const principal = request.principal;
    const input = request.body;
    const agent = agentOf(principal, request.params.agent);
    const reasoning = includesReasoning(request);
    const resume = input.resume ?? [];
    if (resume.length > 0) {
      const session = await threadSession(principal, agent, input.threadId);
      if (!session) throw new ParleyError('session_not_found', 'no such thread');
      const { turnId, from } = await answerInterrupts(principal, session, resume);
      const only = { turnId, runId: input.runId };
      return streamRun(request, reply, input, session, only, from, reasoning);
    }
    const outputs = toolOutputsOf(input);
    if (outputs.length > 0) {
      const session = await threadSession(principal, agent, input.threadId);
      if (!session) throw new ParleyError('session_not_found', 'no such thread');
      const answered = await answerClientToolOutputs(deps, principal, session, outputs, 'messages');
      const only = { turnId: answered.turnId, runId: input.runId };
      return streamRun(request, reply, input, session, only, answered.from, reasoning);
    }
    const text = lastUserMessage(input);
    // Checked before a first run creates the thread's session: bad input writes nothing.
    checkMessage(deps, text);
    clientToolsFor(deps, principal.tenant, agent, input.tools ?? [], 'tools');
    const instructions = instructionsOf(input.context ?? []);
    const state = checkClientState(deps, principal, agent, input.state);
    const session =
      (await threadSession(principal, agent, input.threadId)) ??
      (await newThread(principal, agent, input.threadId));
    const admission = await admitForPrincipal(deps, principal, {
      turnId: input.runId,
      sessionId: session,
      agent,
      message: text,
      instructions,
      // The client's state becomes the session's in the admission's transaction.
      ...(state ? { guard: clientStateGuard(principal, session, input.runId, state) } : {}),
      clientTools: input.tools ?? [],
      clientToolsField: 'tools',
    });
    const only = { turnId: admission.turn_id, runId: input.runId };
    return streamRun(request, reply, input, session, only, admission.sequence, reasoning);
  });

  api.get(thread.url, routeOptions(thread), async (request, reply) => {
    const principal = request.principal;
    const agent = agentOf(principal, request.params.agent);
    const threadId = request.params.threadId;
    if (threadId.length > 200 || !isStorableText(threadId)) {
      throw new ParleyError('invalid_request', 'thread_id: not a valid identifier', {
        field: 'thread_id',
      });
    }
    const session = await threadSession(principal, agent, threadId);
    if (!session) throw new ParleyError('session_not_found', 'no such thread');
    const after = cursorOf(request);
    const reasoning = includesReasoning(request);
    const release = slots.take(request, principal);
    try {
      await streamThread(request, reply, threadId, session, after, reasoning);
    } finally {
      release();
    }
  });

  /** The agent of the URL, one the principal's tenant has (else as unknown). */
  function agentOf(principal: Principal, name: string): string {
    if (!agentsOf(deps).get(principal.tenant, name)) {
      throw new ParleyError('unknown_agent', `no agent named "${name}"`);
    }
    return name;
  }

  /**
   * The session a thread id names for this principal: a session id it may see, or a
   * thread an earlier run created; null when there is none (what the principal may not
   * see is as missing). A session of another agent is `agent_mismatch`.
   */
  async function threadSession(
    principal: Principal,
    agent: string,
    threadId: string,
  ): Promise<string | null> {
    const viewer = viewerOf(deps, principal);
    const found =
      (await findVisibleSession(deps.db, principal.tenant, threadId, viewer)) ??
      (await findThreadSession(deps.db, principal.tenant, threadId, viewer));
    if (!found) return null;
    if (found.agent !== agent) {
      throw new ParleyError('agent_mismatch', `this thread belongs to agent "${found.agent}"`, {
        agent: found.agent,
      });
    }
    return found.session_id;
  }

  /** A thread's first run: its session, owned by the principal, and the thread's row. */
  async function newThread(principal: Principal, agent: string, threadId: string) {
    const config = agentsOf(deps).get(principal.tenant, agent);
    if (!config) throw new ParleyError('unknown_agent', `no agent named "${agent}"`);
    const created = await createThreadSession(
      deps.db,
      threadId,
      {
        tenant: principal.tenant,
        agent,
        title: null,
        greeting: config.greeting,
        owner: principal.user,
        visibility: config.visibility,
      },
      viewerOf(deps, principal),
    );
    if (!created) throw new ParleyError('session_not_found', 'no such thread');
    if (created.agent !== agent) {
      throw new ParleyError('agent_mismatch', `this thread belongs to agent "${created.agent}"`, {
        agent: created.agent,
      });
    }
    return created.session_id;
  }

  /**
   * Answers the interrupts as the principal would through Parley's inbox (the same rules:
   * approver roles, escalations, stale answers); the turn they belong to goes on.
   */
  async function answerInterrupts(
    principal: Principal,
    sessionId: string,
    resume: RunInput['resume'] & object,
  ): Promise<{ turnId: string; from: number }> {
    let turnId: string | null = null;
    let from = Number.MAX_SAFE_INTEGER;
    for (const entry of resume) {
      const asked = await findInputRequest(deps.db, principal.tenant, sessionId, entry.interruptId);
      if (!asked) throw new ParleyError('input_not_found', 'no such interrupt');
      if (turnId !== null && asked.turn_id !== turnId) {
        throw new ParleyError('invalid_request', 'the interrupts belong to different runs', {
          field: 'resume',
        });
      }
      turnId = asked.turn_id;
      const answer = answerOf(entry);
      const answered = await answerForPrincipal(deps, principal, {
        sessionId,
        requestId: entry.interruptId,
        expectedSequence: asked.expected_sequence,
        approved: answer.approved,
        response: answer.response,
        argumentsDigest: asked.arguments_digest ?? undefined,
        credentialRef: answer.credentialRef,
      });
      from = Math.min(from, answered.sequence - 1);
    }
    return { turnId: turnId as string, from };
  }

  async function streamRun(
    request: FastifyRequest,
    reply: FastifyReply,
    input: RunInput,
    sessionId: string,
    only: { turnId: string; runId: string },
    from: number,
    reasoning: boolean,
  ): Promise<void> {
    const fold = new AgUiFold({ threadId: input.threadId, only, reasoning });
    const binary = acceptsProtobuf(request.headers.accept);
    await pump(request, reply, sessionId, from, fold, { binary, ids: false });
  }

  /**
   * The thread from `after` on: the run open at the cursor is folded again silently from
   * its start (so its ids are the ones the client saw), re-opened, and followed. Without a
   * cursor, the thread's messages so far come first as one snapshot (`threadStart`).
   */
  async function streamThread(
    request: FastifyRequest,
    reply: FastifyReply,
    threadId: string,
    sessionId: string,
    after: number | null,
    reasoning: boolean,
  ): Promise<void> {
    if (after === null) {
      const start = await threadStart(threadId, sessionId, reasoning);
      const output = { binary: false, ids: true, preamble: start.preamble };
      await pump(request, reply, sessionId, start.from, start.fold, output);
      return;
    }
    const fold = new AgUiFold({ threadId, reasoning });
    let from = after;
    let preamble: AgUiFrame[] = [];
    if (after > 0) {
      const { start, latest, state } = await lastRunStart(deps.db, sessionId, after);
      if (after > latest) {
        throw new ParleyError('cursor_ahead', 'the cursor is past the latest event', {
          latest_sequence: latest,
        });
      }
      from = start - 1;
      fold.assumeShown(state);
      const follower = new JournalFollower(deps.db, feed, sessionId, from);
      try {
        await follower.drain((event) => {
          if (event.sequence <= after) fold.apply(event);
        });
      } finally {
        follower.close();
      }
      // The client has everything up to its cursor, a run's interrupts included.
      fold.settle();
      fold.take();
      preamble = fold.reopen().map((event) => ({ sequence: after, event }));
      from = after;
    }
    await pump(request, reply, sessionId, from, fold, { binary: false, ids: true, preamble });
  }

  /**
   * A thread stream's start without a cursor: the journal folded up to the last point no
   * run was open at (the open run, if any, is then streamed from its start, live), and
   * the messages of that point as a snapshot. The snapshot and the stream's start are one
   * position of the journal: nothing is left out or sent twice.
   */
  async function threadStart(
    threadId: string,
    sessionId: string,
    reasoning: boolean,
  ): Promise<{ fold: AgUiFold; from: number; preamble: AgUiFrame[] }> {
    let folded = await foldThread(threadId, sessionId, reasoning, null);
    if (folded.fold.openSince !== null) {
      // A run is open now: the snapshot stops where the thread was last idle.
      folded = await foldThread(threadId, sessionId, reasoning, folded.idle);
    }
    const { fold, messages, at } = folded;
    const events = fold.snapshot(`snapshot:${at}`, messages.list());
    return { fold, from: at, preamble: events.map((event) => ({ sequence: at, event })) };
  }

  /**
   * The session's journal (up to `upTo`, else all of it now) through a fold, its events
   * taken into the thread's messages; where the fold last had no run open.
   */
  async function foldThread(
    threadId: string,
    sessionId: string,
    reasoning: boolean,
    upTo: number | null,
  ): Promise<{ fold: AgUiFold; messages: AgUiMessages; at: number; idle: number }> {
    const fold = new AgUiFold({ threadId, reasoning });
    const messages = new AgUiMessages();
    let at = 0;
    let idle = 0;
    const took = () => {
      for (const frame of fold.take()) messages.apply(frame.event);
    };
    const follower = new JournalFollower(deps.db, feed, sessionId, 0);
    try {
      await follower.drain((event) => {
        if (upTo !== null && event.sequence > upTo) return;
        fold.apply(event);
        took();
        if (event.type === 'message') messages.transcript(event);
        at = event.sequence;
        if (fold.openSince === null) idle = at;
      });
    } finally {
      follower.close();
    }
    // Requests the journal ends with are all in: the run waiting for them has ended.
    fold.settle();
    took();
    if (fold.openSince === null) idle = at;
    return { fold, messages, at, idle };
  }

  /**
   * Follows the session's journal from `from` through the fold and writes what it makes
   * (SSE, or the binary transport), until the fold is over (one run) or the client leaves.
   */
  async function pump(
    request: FastifyRequest,
    reply: FastifyReply,
    sessionId: string,
    from: number,
    fold: AgUiFold,
    output: AgUiOutput,
  ): Promise<void> {
    const bound = deps.config.limits.streamBufferBytes;
    await serveAgUi(streams, bound, request, reply, output, async (send, signal) => {
      const follower = new JournalFollower(deps.db, feed, sessionId, from);
      try {
        for (;;) {
          send(fold.take());
          if (fold.over || signal.aborted) break;
          if (!(await follower.take(signal, (event) => fold.apply(event)))) break;
          // A step's requests are journaled in one commit, and nothing more is there now:
          // the run's interrupts are all known.
          fold.settle();
        }
      } finally {
        follower.close();
      }
    });
  }
}

/** The cursor: Last-Event-ID (wins) or `?after=`, a sequence number; null when none. */
function cursorOf(request: FastifyRequest): number | null {
  const header = request.headers['last-event-id'];
  const query = (request.query as { after?: unknown }).after;
  const raw = typeof header === 'string' && header.trim() !== '' ? header.trim() : query;
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) {
    throw new ParleyError(
      'invalid_cursor',
      'the cursor (Last-Event-ID or after) must be a sequence number',
    );
  }
  return Number(raw);
}

/**
 * `?include=reasoning`: the model's reasoning text is shown, as Parley's own event stream
 * shows it to the clients that ask (docs/providers.md, "Reasoning").
 */
function includesReasoning(request: FastifyRequest): boolean {
  const include = (request.query as { include?: unknown } | undefined)?.include;
  if (include === undefined) return false;
  if (typeof include !== 'string' || !/^[a-z_,]{0,64}$/.test(include)) {
    throw new ParleyError('invalid_request', 'include: a comma-separated list, e.g. reasoning', {
      field: 'include',
    });
  }
  return include.split(',').includes('reasoning');
}
