import { readSse } from '../../src/client/sse.js';
import { echoOf, messageFor } from './messages.js';
import { driveSpread, retryPause, type ProtocolClientContext } from './protocolClient.js';
import type { Random } from './random.js';

/**
 * A client of the OpenAI-compatible Chat Completions under the chaos (docs/protocols.md,
 * "Chat Completions"): stateless one-turn requests with the turn id as their
 * `Idempotency-Key`, half of them streamed. Any failure — no answer, a 5xx, a broken
 * stream, `504 turn_pending`, a stream ended by `reply_withdrawn` — sends the same request
 * again to the next API process: the same key is the same turn, and each attempt's
 * answer is the reply as it stands, so a completed answer must be exactly the demo model's
 * echo. Once answered, the turn's session is read from its response
 * (`GET /openai/v1/responses/resp_<turn id>`) and it joins the ledger, so the checker holds
 * it to the rest (admitted once, ended once, its reply in the transcript).
 */
export async function runChatClient(context: ProtocolClientContext): Promise<void> {
  await driveSpread(context, 'soakc', (random, label) => driveCompletion(context, random, label));
}

interface Chunk {
  choices?: { delta?: { content?: string }; finish_reason?: string | null }[];
  error?: { code?: string };
}

async function driveCompletion(
  context: ProtocolClientContext,
  random: Random,
  turnId: string,
): Promise<void> {
  const { ledger, apis } = context;
  const message = messageFor('plain', turnId, random);
  const stream = random.chance(0.5);
  const deadline = Date.now() + context.followTimeoutMs;
  ledger.counters.chatCompletions += 1;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    if (attempt > 0) {
      ledger.counters.chatRetries += 1;
      await retryPause(attempt, random);
    }
    const base = apis.pick();
    try {
      const response = await fetch(`${base}/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': turnId },
        body: JSON.stringify({
          model: 'default',
          messages: [{ role: 'user', content: message }],
          stream,
        }),
        signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
      });
      if (response.status >= 500 || !response.body) {
        // 504 turn_pending included: the turn goes on, the same request follows it again.
        if (response.status !== 504) apis.failures += 1;
        await response.body?.cancel().catch(() => {});
        continue;
      }
      if (response.status !== 200) {
        ledger.violation('chat', `${turnId}: ${response.status} ${await response.text()}`);
        return;
      }
      const text = stream ? await streamedText(response) : await completedText(response);
      if (text === null) continue;
      if (text !== echoOf(message)) {
        ledger.violation('chat', `${turnId}: answered "${text.slice(0, 80)}"`);
      }
      await acknowledge(context, turnId, message);
      return;
    } catch {
      apis.failures += 1;
    }
  }
  ledger.counters.unacknowledged += 1;
}

/** A streamed answer's text, or null when the stream did not reach its end (send again). */
async function streamedText(response: Response): Promise<string | null> {
  let text = '';
  let stopped = false;
  for await (const frame of readSse(response.body as ReadableStream<Uint8Array>)) {
    if (frame.kind !== 'message' || frame.data === '') continue;
    if (frame.data === '[DONE]') return stopped ? text : null;
    const chunk = JSON.parse(frame.data) as Chunk;
    if (chunk.error) return null;
    const choice = chunk.choices?.[0];
    text += choice?.delta?.content ?? '';
    if (choice?.finish_reason === 'stop') stopped = true;
  }
  return null;
}

async function completedText(response: Response): Promise<string | null> {
  const body = (await response.json()) as {
    choices?: { message?: { content?: string } }[];
  };
  return body.choices?.[0]?.message?.content ?? null;
}

/**
 * The answered turn joins the ledger, with its session read from its response (asked
 * again through failures for a minute: an engine restarting may be away for seconds).
 */
async function acknowledge(
  context: ProtocolClientContext,
  turnId: string,
  message: string,
): Promise<void> {
  const { ledger, apis } = context;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${apis.pick()}/openai/v1/responses/resp_${turnId}`, {
        signal: AbortSignal.timeout(10_000),
      });
      if (response.status === 200) {
        const body = (await response.json()) as { conversation?: { id?: string } };
        const sessionId = body.conversation?.id;
        if (!sessionId) {
          ledger.violation('chat', `${turnId}: answered, but its response names no conversation`);
          return;
        }
        ledger.acknowledge({ turnId, sessionId, kind: 'plain', message, sequence: null });
        return;
      }
      await response.body?.cancel().catch(() => {});
    } catch {
      apis.failures += 1;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  ledger.violation('chat', `${turnId}: answered, but its response could not be read for a minute`);
}
