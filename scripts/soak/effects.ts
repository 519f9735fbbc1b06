import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import type { Random } from './random.js';

/**
 * Tools with side effects outside Parley, and the ledger of those effects.
 *
 * The soak serves an MCP server over Streamable HTTP on 127.0.0.1 (in its own process, so
 * it outlives every kill) with two tools, both keyed by an argument the client chose:
 * - `charge`: not idempotent. Parley must never run a call twice; a call found running
 *   after a crash is recorded as `interrupted`.
 * - `touch`: declared `idempotent: true`, so a call found running after a crash runs again.
 * Each writes its effect to the ledger as soon as it is called, then answers 1-2 s later:
 * SIGKILLs and SIGSTOPs land between the effect and the result Parley journals.
 */
export const effectServerName = 'effects';
export type EffectTool = 'charge' | 'touch';
export const effectTools: Record<EffectTool, { exposed: string; idempotent: boolean }> = {
  charge: { exposed: `${effectServerName}__charge`, idempotent: false },
  touch: { exposed: `${effectServerName}__touch`, idempotent: true },
};

export interface Effect {
  tool: EffectTool;
  key: string;
  /** How many times the tool was called with this key (each call performs the effect). */
  performed: number;
}

/** The external ledger: what the tools did, whatever Parley journaled. */
export class EffectLedger {
  readonly effects = new Map<string, Effect>();

  record(tool: EffectTool, key: string): void {
    const known = this.effects.get(key);
    if (known) known.performed += 1;
    else this.effects.set(key, { tool, key, performed: 1 });
  }
}

/** How long a call takes after its effect: 1-2 s, fixed by its key (a rerun waits as long). */
export function answerDelayMs(key: string): number {
  return 1_000 + (createHash('sha256').update(key).digest().readUInt16BE(0) % 1_000);
}

function buildServer(ledger: EffectLedger): McpServer {
  const server = new McpServer({ name: 'parley-soak-effects', version: '1.0.0' });
  for (const tool of Object.keys(effectTools) as EffectTool[]) {
    server.registerTool(
      tool,
      {
        description: `Performs the ${tool} named by key (soak)`,
        inputSchema: { key: z.string() },
      },
      async ({ key }) => {
        ledger.record(tool, key);
        await new Promise((resolve) => setTimeout(resolve, answerDelayMs(key)));
        return { content: [{ type: 'text', text: `${tool} ${key} done` }] };
      },
    );
  }
  return server;
}

export interface EffectServer {
  url: string;
  close(): Promise<void>;
}

/** Stateless Streamable HTTP: a server and a transport per request (the SDK's guide). */
export async function startEffectServer(ledger: EffectLedger): Promise<EffectServer> {
  const http: Server = createServer((request, response) => {
    const server = buildServer(ledger);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(request, response))
      .catch(() => {
        response.statusCode = 500;
        response.end();
      });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

/** The configuration the soak's processes need to reach the tools (docs/tools.md). */
export function effectToolsConfig(url: string): {
  mcpServers: Record<string, unknown>;
  agentTools: Record<string, unknown>;
} {
  return {
    mcpServers: { [effectServerName]: { url, call_timeout_ms: 10_000 } },
    agentTools: Object.fromEntries(
      Object.values(effectTools).map(({ exposed, idempotent }) => [
        exposed,
        idempotent ? { policy: 'allow', idempotent: true } : 'allow',
      ]),
    ),
  };
}

/**
 * An `effects` round's message: 1-3 calls in one model step (the demo model proposes one
 * per `/tool` line), a mix of both tools, each with a key unique in the run.
 */
export function effectsMessage(turnId: string, random: Random): string {
  const count = random.int(1, 3);
  return Array.from({ length: count }, (_, index) => {
    const tool: EffectTool = random.chance(0.6) ? 'charge' : 'touch';
    return `/tool ${effectTools[tool].exposed} {"key": "${turnId}.${index + 1}"}`;
  }).join('\n');
}
