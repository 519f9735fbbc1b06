import { readSse } from '../../src/client/sse.js';
import { echoOf, messageFor } from './messages.js';
import { driveSpread, retryPause, type ProtocolClientContext } from './protocolClient.js';
import type { Random } from './random.js';

/**
 * An AG-UI client under the chaos (docs/protocols.md, "AG-UI"): each run's thread is a
 * session it makes first (a lost answer leaves an empty session behind, nothing more),
 * and the run's `runId` is its turn id. Any failure — no answer, a 5xx, a stream broken
 * before `RUN_FINISHED` — sends the same run again to the next API process: the same
 * `runId` is the same turn, streamed again from its start. A run that finished must spell
 * exactly the demo model's echo, once the messages `parley.attempt_reset` withdrew are
 * dropped. Then the turn joins the ledger, so the checker holds it to the rest.
 */
export async function runAguiClient(context: ProtocolClientContext): Promise<void> {
  await driveSpread(context, 'soakg', (random, label) => driveRun(context, random, label));
}

async function driveRun(
  context: ProtocolClientContext,
  random: Random,
  runId: string,
): Promise<void> {
  const { ledger, apis } = context;
  const message = messageFor('plain', runId, random);
  const deadline = Date.now() + context.followTimeoutMs;
  ledger.counters.aguiRuns += 1;
  let sessionId: string | null = null;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    if (attempt > 0) {
      ledger.counters.aguiRetries += 1;
      await retryPause(attempt, random);
    }
    const base = apis.pick();
    try {
      sessionId ??= await newSession(base, deadline);
      if (sessionId === null) {
        apis.failures += 1;
        continue;
      }
      const response = await fetch(`${base}/ag-ui/default`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({
          threadId: sessionId,
          runId,
          messages: [{ id: `${runId}_m`, role: 'user', content: message }],
        }),
        signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
      });
      if (response.status >= 500 || !response.body) {
        apis.failures += 1;
        await response.body?.cancel().catch(() => {});
        continue;
      }
      if (response.status !== 200) {
        ledger.violation('ag-ui', `${runId}: ${response.status} ${await response.text()}`);
        return;
      }
      const text = await runText(response, runId, ledger);
      if (text === null) continue;
      if (text !== echoOf(message)) {
        ledger.violation('ag-ui', `${runId}: answered "${text.slice(0, 80)}"`);
      }
      ledger.acknowledge({ turnId: runId, sessionId, kind: 'plain', message, sequence: null });
      return;
    } catch {
      apis.failures += 1;
    }
  }
  ledger.counters.unacknowledged += 1;
}

/** A session for the run's thread, or null when no answer came. */
async function newSession(base: string, deadline: number): Promise<string | null> {
  const response = await fetch(`${base}/api/v1/chat/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agent: 'default' }),
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
  outcome?: { type?: string };
}

/**
 * The text of a run that finished, its withdrawn messages dropped; null when the stream
 * broke first (send the run again). A run that ended otherwise is a violation.
 */
async function runText(
  response: Response,
  runId: string,
  ledger: ProtocolClientContext['ledger'],
): Promise<string | null> {
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
      if (event.type === 'RUN_FINISHED' && event.outcome?.type === 'success') {
        return [...messages.values()].join('');
      }
      ledger.violation('ag-ui', `${runId}: the run ended ${JSON.stringify(event)}`);
      return null;
    }
  }
  return null;
}
