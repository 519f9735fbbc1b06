/**
 * `parley tools list [--agent NAME] [--json]`: every tool an agent has, with its source
 * and policy, through a running server's API (`GET /api/v1/agents/{name}/tools`), so what
 * it shows includes the MCP tools that server actually has right now.
 */
interface Options {
  url?: string | undefined;
  key?: string | undefined;
  agent?: string | undefined;
  json?: boolean | undefined;
}

interface AgentTools {
  agent: string;
  tools: { name: string; source: string; policy: string; available: boolean }[];
  mcp_servers: {
    name: string;
    transport: string;
    state: string;
    tools: number;
    error: string | null;
  }[];
}

export async function toolsCommand(args: string[], options: Options): Promise<number> {
  if (args[0] !== 'list') {
    process.stderr.write('usage: parley tools list [--agent NAME] [--json]\n');
    return 2;
  }
  const base = (options.url ?? process.env.PARLEY_URL ?? 'http://127.0.0.1:8080').replace(
    /\/$/,
    '',
  );
  const key = options.key ?? process.env.PARLEY_API_KEY;
  const get = async (path: string) => {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        headers: {
          'parley-protocol-version': '1',
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
      });
    } catch {
      throw new Error(`cannot reach a Parley server at ${base} (is it running? use --url)`);
    }
    const payload = (await response.json()) as Record<string, unknown>;
    if (!response.ok) throw new Error(`${String(payload.error)}: ${String(payload.message)}`);
    return payload;
  };
  const names = options.agent
    ? [options.agent]
    : ((await get('/api/v1/agents')).items as { name: string }[]).map((agent) => agent.name);
  const listings: AgentTools[] = [];
  for (const name of names) {
    listings.push(
      (await get(`/api/v1/agents/${encodeURIComponent(name)}/tools`)) as unknown as AgentTools,
    );
  }
  if (options.json) {
    process.stdout.write(`${JSON.stringify(options.agent ? listings[0] : listings, null, 2)}\n`);
    return 0;
  }
  for (const listing of listings) {
    process.stdout.write(`agent ${listing.agent}\n`);
    if (listing.tools.length === 0) {
      process.stdout.write('  (no tools)\n');
      continue;
    }
    const rows = [
      ['TOOL', 'SOURCE', 'POLICY', 'AVAILABLE'],
      ...listing.tools.map((tool) => [
        tool.name,
        tool.source,
        tool.policy,
        tool.available ? 'yes' : 'no',
      ]),
    ];
    for (const line of columns(rows)) process.stdout.write(`  ${line}\n`);
  }
  // Each listing names the servers of its agent's tools: every one once.
  const servers = new Map(
    listings.flatMap((listing) => listing.mcp_servers).map((server) => [server.name, server]),
  );
  for (const server of servers.values()) {
    const state =
      server.state === 'ready'
        ? `ready, ${server.tools} tool(s)`
        : `${server.state} (${server.error ?? 'not connected'})`;
    process.stdout.write(`mcp ${server.name} (${server.transport}): ${state}\n`);
  }
  return 0;
}

/** Rows as aligned columns: each as wide as its longest cell, two spaces between. */
export function columns(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, index) =>
        index === row.length - 1 ? cell : cell.padEnd((widths[index] ?? 0) + 2),
      )
      .join(''),
  );
}
