import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { echoOf, messageFor } from './messages.js';
import { driveSpread, retryPause, type ProtocolClientContext } from './protocolClient.js';
import type { Random } from './random.js';

/**
 * A client of the MCP server under the chaos (docs/protocols.md, "MCP server"), with the
 * official SDK's `Client`: plain turns as calls of the `default` agent's tool, each in a
 * new session, with an idempotency key (`_meta["parley/idempotency_key"]`, the turn id).
 * An MCP session lives in one API process, so a call that fails (the process was killed,
 * the stream broke past its resumption) is made again, with the same key, through a new
 * session on the next API process; a call answered `in_progress` (the turn outlasted the
 * server's blocking wait) is made again too. The same key is the same turn: the checker
 * finds it admitted once, and the client holds the answer to the demo model's echo.
 */

interface Outcome {
  session_id?: string;
  turn_id?: string;
  status?: string;
  reply?: string;
}

export async function runMcpClient(context: ProtocolClientContext): Promise<void> {
  await driveSpread(context, 'soakm', (random, label) => driveCall(context, random, label));
}

async function driveCall(
  context: ProtocolClientContext,
  random: Random,
  turnId: string,
): Promise<void> {
  const { ledger, apis } = context;
  const message = messageFor('plain', turnId, random);
  const deadline = Date.now() + context.followTimeoutMs;
  let acknowledged = false;
  ledger.counters.mcpCalls += 1;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    if (attempt > 0) {
      ledger.counters.mcpRetries += 1;
      await retryPause(attempt, random);
    }
    const client = new Client({ name: 'parley-soak', version: '1' });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${apis.pick()}/mcp`), {
          reconnectionOptions: {
            initialReconnectionDelay: 200,
            maxReconnectionDelay: 1000,
            reconnectionDelayGrowFactor: 2,
            maxRetries: 2,
          },
        }),
      );
      const result = await client.callTool(
        {
          name: 'default',
          arguments: { message },
          _meta: { 'parley/idempotency_key': turnId },
        },
        undefined,
        // A call whose process died may never hear back: silent for 10 s, it is made again.
        { timeout: 10_000, resetTimeoutOnProgress: true, onprogress: () => {} },
      );
      const outcome = (result.structuredContent ?? {}) as Outcome;
      if (result.isError) {
        ledger.violation('mcp', `${turnId}: ${JSON.stringify(result.content).slice(0, 200)}`);
        return;
      }
      if (!acknowledged && outcome.session_id && outcome.turn_id === turnId) {
        acknowledged = true;
        ledger.acknowledge({
          turnId,
          sessionId: outcome.session_id,
          kind: 'plain',
          message,
          sequence: null,
        });
      }
      if (outcome.status === 'in_progress') continue;
      if (outcome.status !== 'completed' || outcome.reply !== echoOf(message)) {
        ledger.violation(
          'mcp',
          `${turnId}: ${outcome.status ?? 'no status'} "${(outcome.reply ?? '').slice(0, 80)}"`,
        );
      }
      return;
    } catch {
      // The process went away, or the call's stream could not be resumed: again, elsewhere.
      apis.failures += 1;
    } finally {
      await client.close().catch(() => {});
    }
  }
  if (!acknowledged) ledger.counters.unacknowledged += 1;
  else ledger.counters.followTimeouts += 1;
}
