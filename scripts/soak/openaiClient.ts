import { readSse } from '../../src/client/sse.js';
import type { Ledger } from './ledger.js';
import { echoOf, messageFor } from './messages.js';
import { driveSpread, retryPause, type ProtocolClientContext } from './protocolClient.js';
import type { Random } from './random.js';

/**
 * A client of the OpenAI-compatible API under the chaos (docs/protocols.md): plain turns
 * as streamed Responses, each in a new conversation, with its turn id as the
 * `Idempotency-Key`. Until the response's first event arrives the request is sent again,
 * unchanged, to the next API process; after it (the turn is admitted: `response.created`
 * is its acknowledgement) a broken stream is resumed from the next API process with
 * `GET /responses/{id}?stream=true&starting_after=N`. The client holds the adapter to
 * what it promises: across every connection each `sequence_number` once, in order from
 * 0, and a completed response whose text is the demo model's echo. The turns join the
 * ledger, so the checker holds them to the rest (ended once, the transcript's reply).
 */

interface ResponseEvent {
  type: string;
  sequence_number: number;
  response?: {
    conversation?: { id?: string };
    output?: { type: string; content?: { text?: string }[] }[];
  };
}

const endings = new Set(['response.completed', 'response.failed', 'response.incomplete']);

export async function runOpenaiClient(context: ProtocolClientContext): Promise<void> {
  await driveSpread(context, 'soako', (random, label) => driveResponse(context, random, label));
}

async function driveResponse(
  context: ProtocolClientContext,
  random: Random,
  turnId: string,
): Promise<void> {
  const { ledger, apis } = context;
  const message = messageFor('plain', turnId, random);
  const deadline = Date.now() + context.followTimeoutMs;
  const seen: ResponseEvent[] = [];
  let sessionId: string | null = null;
  // Half the clients drop their stream at the first text, as a closed tab would, and
  // come back through the other API process.
  let dropAtText = random.chance(0.5);
  ledger.counters.openaiResponses += 1;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    if (attempt > 0) {
      if (sessionId === null) ledger.counters.admissionRetries += 1;
      else ledger.counters.openaiResumes += 1;
      await retryPause(attempt, random);
    }
    const last = seen.at(-1)?.sequence_number ?? -1;
    const base = apis.pick();
    const dropped = new AbortController();
    const signal = AbortSignal.any([
      dropped.signal,
      AbortSignal.timeout(Math.max(1, deadline - Date.now())),
    ]);
    const request =
      sessionId === null
        ? fetch(`${base}/openai/v1/responses`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': turnId },
            body: JSON.stringify({ model: 'default', input: message, stream: true }),
            signal,
          })
        : fetch(`${base}/openai/v1/responses/resp_${turnId}?stream=true&starting_after=${last}`, {
            signal: AbortSignal.timeout(context.followTimeoutMs),
          });
    try {
      const response = await request;
      if (response.status >= 500 || !response.body) {
        apis.failures += 1;
        await response.body?.cancel().catch(() => {});
        continue;
      }
      if (response.status !== 200) {
        ledger.violation('openai', `${turnId}: ${response.status} ${await response.text()}`);
        return;
      }
      for await (const frame of readSse(response.body)) {
        if (frame.kind !== 'message' || frame.data === '') continue;
        const event = JSON.parse(frame.data) as ResponseEvent;
        // A retried POST of an admitted turn replays its story from the start: what this
        // client has seen already is skipped, the rest must continue it.
        if (event.sequence_number <= (seen.at(-1)?.sequence_number ?? -1)) continue;
        if (event.sequence_number !== (seen.at(-1)?.sequence_number ?? -1) + 1) {
          ledger.violation(
            'openai stream',
            `${turnId}: sequence_number ${event.sequence_number} after ${seen.at(-1)?.sequence_number ?? 'none'}`,
          );
        }
        seen.push(event);
        if (sessionId === null && event.type === 'response.created') {
          sessionId = event.response?.conversation?.id ?? null;
          if (sessionId === null) {
            ledger.violation('openai', `${turnId}: response.created names no conversation`);
            return;
          }
          ledger.acknowledge({ turnId, sessionId, kind: 'plain', message, sequence: null });
        }
        if (endings.has(event.type)) {
          judge(ledger, turnId, message, event);
          return;
        }
        if (dropAtText && event.type === 'response.output_text.delta') {
          dropAtText = false;
          dropped.abort();
        }
      }
    } catch {
      // No answer, or the stream broke: the next attempt goes to the other API process.
      if (!dropped.signal.aborted) apis.failures += 1;
    }
  }
  if (sessionId === null) ledger.counters.unacknowledged += 1;
  else ledger.counters.followTimeouts += 1;
}

/** A plain message answered alone completes with the demo model's echo. */
function judge(ledger: Ledger, turnId: string, message: string, event: ResponseEvent): void {
  if (event.type !== 'response.completed') {
    ledger.violation('openai', `${turnId}: ended ${event.type}`);
    return;
  }
  const messages = (event.response?.output ?? []).filter((item) => item.type === 'message');
  const text = (messages.at(-1)?.content ?? []).map((part) => part.text ?? '').join('');
  if (text !== echoOf(message)) {
    ledger.violation('openai', `${turnId}: completed with "${text.slice(0, 80)}"`);
  }
}
