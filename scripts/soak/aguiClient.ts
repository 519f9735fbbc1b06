import { readSse } from '../../src/client/sse.js';
import { echoOf, messageFor } from './messages.js';
import { sleep } from './http.js';
import { driveSpread, retryPause, type ProtocolClientContext } from './protocolClient.js';
import type { Random } from './random.js';
import { stateAgent } from './state.js';

/**
 * An AG-UI client under the chaos (docs/protocols.md, "AG-UI"): each run's thread is a
 * session it makes first (a lost answer leaves an empty session behind, nothing more),
 * and the run's `runId` is its turn id. Any failure — no answer, a 5xx, a stream broken
 * before `RUN_FINISHED` — sends the same run again to the next API process: the same
 * `runId` is the same turn, streamed again from its start. A run that finished must spell
 * exactly the demo model's echo, once the messages `parley.attempt_reset` withdrew are
 * dropped. Then the turn joins the ledger, so the checker holds it to the rest. A few runs
 * propose a call that needs approval instead: the run ends with its interrupt, and the
 * next run answers it in `resume` (docs/protocols.md, "Approvals and questions are
 * interrupts"); an answer acknowledged with 200 joins the ledger's answers. A few run on
 * a thread of the agent that keeps a state (state.ts): the first carries a state, the
 * second another and has its model change it; each state a run's 200 took joins the
 * ledger's states.
 */
export async function runAguiClient(context: ProtocolClientContext): Promise<void> {
  await driveSpread(context, 'soakg', (random, label) => driveRun(context, random, label));
}

async function driveRun(
  context: ProtocolClientContext,
  random: Random,
  runId: string,
): Promise<void> {
  const { ledger } = context;
  // A few runs propose a call that needs approval (answered by the next run's `resume`);
  // a few carry a state, on the agent that keeps one.
  const round = random.weighted({ plain: 5, approval: 3, state: 2 });
  const kind = round === 'approval' ? 'approval' : 'plain';
  const agent = round === 'state' ? stateAgent : 'default';
  const message = messageFor(kind, runId, random);
  const deadline = Date.now() + context.followTimeoutMs;
  ledger.counters.aguiRuns += 1;
  const thread: Thread = { agent, sessionId: null };
  const state = round === 'state' ? { count: random.int(1, 99), by: runId } : undefined;
  const body = (sessionId: string) => ({
    threadId: sessionId,
    runId,
    messages: [{ id: `${runId}_m`, role: 'user', content: message }],
    ...(state ? { state } : {}),
  });
  const ended = await sendRun(context, random, runId, thread, body, deadline);
  if (ended === null || thread.sessionId === null) {
    ledger.counters.unacknowledged += 1;
    return;
  }
  const sessionId = thread.sessionId;
  ledger.acknowledge({ turnId: runId, sessionId, kind, message, sequence: null });
  if (state) tookState(ledger, sessionId, runId, state);
  if (kind === 'plain') {
    if (ended.interrupts.length > 0 || ended.text !== echoOf(message)) {
      ledger.violation('ag-ui', `${runId}: answered "${ended.text.slice(0, 80)}"`);
    }
    if (round === 'state') await changeState(context, random, `${runId}_2`, thread, deadline);
    return;
  }
  const interrupt = ended.interrupts[0];
  if (ended.interrupts.length !== 1 || interrupt?.reason !== 'approval') {
    ledger.violation('ag-ui', `${runId}: ended with ${JSON.stringify(ended.interrupts)}`);
    return;
  }
  ledger.counters.approvalsRequested += 1;
  await resume(context, random, runId, sessionId, interrupt.id, deadline);
}

/** The thread a run goes to: its agent, and its session once made. */
interface Thread {
  agent: string;
  sessionId: string | null;
}

function tookState(
  ledger: ProtocolClientContext['ledger'],
  sessionId: string,
  turnId: string,
  data: Record<string, unknown>,
): void {
  ledger.states.push({ sessionId, turnId, data });
  ledger.counters.aguiStates += 1;
}

/**
 * A second run on a thread with state: it carries another state (taken before its turn),
 * and its model changes the state again (`update_state`, written by the turn's commit).
 */
async function changeState(
  context: ProtocolClientContext,
  random: Random,
  runId: string,
  thread: Thread,
  deadline: number,
): Promise<void> {
  const { ledger } = context;
  const message = messageFor('state', runId, random);
  const state = { count: random.int(1, 99), by: runId };
  const body = (sessionId: string) => ({
    threadId: sessionId,
    runId,
    messages: [{ id: `${runId}_m`, role: 'user', content: message }],
    state,
  });
  const ended = await sendRun(context, random, runId, thread, body, deadline);
  if (ended === null) return;
  const sessionId = thread.sessionId as string;
  ledger.acknowledge({ turnId: runId, sessionId, kind: 'state', message, sequence: null });
  tookState(ledger, sessionId, runId, state);
}

/**
 * Answers an approval interrupt in the next run (`resume`, its own runId), sent again
 * unchanged through failures. The 200 is the acknowledgement (the answer is recorded
 * before the run's stream begins): the checker holds it like any answer. A `409
 * stale_input` means an earlier attempt landed, or the deadline came first: not told.
 */
async function resume(
  context: ProtocolClientContext,
  random: Random,
  runId: string,
  sessionId: string,
  interruptId: string,
  deadline: number,
): Promise<void> {
  const { ledger, apis } = context;
  const approved = random.chance(0.75);
  await sleep(random.int(0, 300));
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    if (attempt > 0) {
      ledger.counters.aguiRetries += 1;
      await retryPause(attempt, random);
    }
    try {
      const response = await postRun(apis.pick(), 'default', deadline, {
        threadId: sessionId,
        runId: `${runId}_resume`,
        messages: [],
        resume: [{ interruptId, status: 'resolved', payload: { approved, reason: 'soak' } }],
      });
      if (response.status >= 500 || !response.body) {
        apis.failures += 1;
        await response.body?.cancel().catch(() => {});
        continue;
      }
      if (response.status !== 200) {
        const text = await response.text();
        if (response.status === 409 && text.includes('stale_input')) {
          ledger.counters.staleAnswers += 1;
        } else {
          ledger.violation('ag-ui resume', `${runId}: ${response.status} ${text}`);
        }
        return;
      }
      ledger.answers.push({ sessionId, requestId: interruptId, approved });
      ledger.counters.aguiResumes += 1;
      if (approved) ledger.counters.approved += 1;
      else ledger.counters.rejected += 1;
      // The rest of the turn is the journal's; its stream is read, not needed.
      await runOutcome(response, runId, ledger).catch(() => null);
      return;
    } catch {
      apis.failures += 1;
    }
  }
}

/**
 * Sends a run until its stream reaches `RUN_FINISHED` (the same runId each time: the
 * same turn, streamed again from its start); its text and interrupts, or null when no
 * attempt got there in time. `thread.sessionId` is its session once made.
 */
async function sendRun(
  context: ProtocolClientContext,
  random: Random,
  runId: string,
  thread: Thread,
  body: (sessionId: string) => unknown,
  deadline: number,
): Promise<RunEnd | null> {
  const { ledger, apis } = context;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    if (attempt > 0) {
      ledger.counters.aguiRetries += 1;
      await retryPause(attempt, random);
    }
    const base = apis.pick();
    try {
      thread.sessionId ??= await newSession(base, thread.agent, deadline);
      if (thread.sessionId === null) {
        apis.failures += 1;
        continue;
      }
      const response = await postRun(base, thread.agent, deadline, body(thread.sessionId));
      if (response.status >= 500 || !response.body) {
        apis.failures += 1;
        await response.body?.cancel().catch(() => {});
        continue;
      }
      if (response.status !== 200) {
        const text = await response.text();
        if (response.status === 409 && text.includes('session_busy')) {
          // The previous turn's worker has not let the session go yet: nothing written.
          ledger.counters.aguiBusy += 1;
          continue;
        }
        ledger.violation('ag-ui', `${runId}: ${response.status} ${text}`);
        return null;
      }
      const ended = await runOutcome(response, runId, ledger);
      if (ended !== null) return ended;
    } catch {
      apis.failures += 1;
    }
  }
  return null;
}

function postRun(base: string, agent: string, deadline: number, body: unknown): Promise<Response> {
  return fetch(`${base}/ag-ui/${agent}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
  });
}

/** A session for the run's thread, or null when no answer came. */
async function newSession(base: string, agent: string, deadline: number): Promise<string | null> {
  const response = await fetch(`${base}/api/v1/chat/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agent }),
    signal: AbortSignal.timeout(Math.max(1, Math.min(10_000, deadline - Date.now()))),
  });
  if (response.status !== 201) {
    await response.body?.cancel().catch(() => {});
    return null;
  }
  return ((await response.json()) as { session_id: string }).session_id;
}

interface AgUiEvent {
  type: string;
  messageId?: string;
  delta?: string;
  name?: string;
  value?: { message_id?: string | null };
  outcome?: { type?: string; interrupts?: { id: string; reason?: string }[] };
}

/** How a run ended: its text (withdrawn messages dropped) and the interrupts it waits on. */
interface RunEnd {
  text: string;
  interrupts: { id: string; reason?: string }[];
}

/**
 * The end of a run that finished (`success`, or `interrupt` with what it waits for); null
 * when the stream broke first (send the run again). A run that ended otherwise is a
 * violation.
 */
async function runOutcome(
  response: Response,
  runId: string,
  ledger: ProtocolClientContext['ledger'],
): Promise<RunEnd | null> {
  const messages = new Map<string, string>();
  for await (const frame of readSse(response.body as ReadableStream<Uint8Array>)) {
    if (frame.kind !== 'message' || frame.data === '') continue;
    const event = JSON.parse(frame.data) as AgUiEvent;
    if (event.type === 'TEXT_MESSAGE_CONTENT' && event.messageId) {
      messages.set(event.messageId, (messages.get(event.messageId) ?? '') + (event.delta ?? ''));
    }
    if (event.type === 'CUSTOM' && event.name === 'parley.attempt_reset') {
      if (event.value?.message_id) messages.delete(event.value.message_id);
    }
    if (event.type === 'RUN_ERROR' || event.type === 'RUN_FINISHED') {
      const outcome = event.type === 'RUN_FINISHED' ? event.outcome?.type : null;
      if (outcome === 'success' || outcome === 'interrupt') {
        return {
          text: [...messages.values()].join(''),
          interrupts: outcome === 'interrupt' ? (event.outcome?.interrupts ?? []) : [],
        };
      }
      ledger.violation('ag-ui', `${runId}: the run ended ${JSON.stringify(event)}`);
      return null;
    }
  }
  return null;
}
