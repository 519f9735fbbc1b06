import { runA2aClient } from './a2aClient.js';
import { runAguiClient } from './aguiClient.js';
import { runChatClient } from './chatClient.js';
import { Apis } from './http.js';
import { stepsAgent } from './budgets.js';
import { Ledger } from './ledger.js';
import { stepsWeights } from './messages.js';
import { MissionLedger } from './missionLedger.js';
import { runOpenaiClient } from './openaiClient.js';
import { runMcpClient } from './mcpClient.js';
import { runMediaClient } from './mediaClient.js';
import { runMissionClient } from './missions.js';
import type { SoakOptions } from './options.js';
import type { Outside } from './outside.js';
import { Pacer } from './pacer.js';
import type { Random } from './random.js';
import { SessionLoop } from './session.js';

/**
 * Everything the soak's clients do during the chaos, whichever the engine: the chat
 * sessions (turns, effect tools, approvals, cancels, budgets), the protocol clients
 * (OpenAI Responses and Chat Completions, AG-UI, A2A, MCP), the media client (uploads, photos, speech), the mission
 * client (executions, cancels, unblocks), and the people on Telegram and Slack. What they
 * were told is in `ledger` and `missions`, the platforms' traffic in `outside`.
 */
export class Traffic {
  readonly ledger = new Ledger();
  readonly missions = new MissionLedger();
  readonly pacer: Pacer;
  /** One per client: a client's sessions share its connection to the API processes. */
  private readonly clientApis: Apis[];

  constructor(
    private readonly options: SoakOptions,
    private readonly urls: string[],
    private readonly outside: Outside,
  ) {
    this.pacer = new Pacer(options.turns, this.windowMs);
    this.clientApis = Array.from({ length: options.clients }, (_, index) => {
      const apis = new Apis(urls);
      for (let skip = 0; skip < index; skip++) apis.pick(); // clients start on different APIs
      return apis;
    });
  }

  /** Admissions, dispatches and platform messages are spread over most of the chaos. */
  private get windowMs(): number {
    return this.options.durationMs * 0.85;
  }

  /** Runs every client until each is done. */
  async run(random: Random): Promise<void> {
    const { options, outside } = this;
    const loops = Array.from({ length: options.sessions }, (_, index) => {
      const client = index % options.clients;
      return new SessionLoop(
        {
          apis: this.clientApis[client] as Apis,
          ledger: this.ledger,
          pacer: this.pacer,
          followTimeoutMs: 90_000,
          // A quarter of the sessions are also followed through the AG-UI thread stream.
          followThread: index % 4 === 1,
          // One in sixteen is the `steps` agent's, whose turns run out of steps.
          ...(index % 16 === 15 ? { agent: stepsAgent, weights: stepsWeights } : {}),
        },
        random.fork(`session-${index}`),
        `c${client}s${index}`,
      );
    });
    // As many people on each platform as a fifth of the sessions, each writing a few times
    // (at most 20: in a long run the platforms stay a part of the mix, not most of it).
    const people = Math.max(2, Math.round(options.sessions / 5));
    const messages = Math.min(20, Math.max(3, Math.round(options.turns / 60)));
    const track = (name: string, client: Promise<void> | undefined) =>
      client === undefined ? undefined : this.track(name, client);
    await Promise.all([
      ...loops.map((loop, index) => track(`session ${index}`, loop.run())),
      track(
        'missions',
        runMissionClient({
          apis: new Apis(this.urls),
          ledger: this.missions,
          random: random.fork('missions'),
          count: executionsFor(options),
          windowMs: this.windowMs,
          followTimeoutMs: 90_000,
        }),
      ),
      track(
        'openai',
        runOpenaiClient({
          apis: new Apis(this.urls),
          ledger: this.ledger,
          random: random.fork('openai'),
          count: Math.max(2, Math.round(options.turns / 20)),
          windowMs: this.windowMs,
          followTimeoutMs: 90_000,
        }),
      ),
      track(
        'chat completions',
        runChatClient({
          apis: new Apis(this.urls),
          ledger: this.ledger,
          random: random.fork('chat'),
          count: Math.max(2, Math.round(options.turns / 20)),
          windowMs: this.windowMs,
          followTimeoutMs: 90_000,
        }),
      ),
      track(
        'ag-ui',
        runAguiClient({
          apis: new Apis(this.urls),
          ledger: this.ledger,
          random: random.fork('ag-ui'),
          count: Math.max(2, Math.round(options.turns / 20)),
          windowMs: this.windowMs,
          followTimeoutMs: 90_000,
        }),
      ),
      track(
        'a2a',
        runA2aClient(
          {
            apis: new Apis(this.urls),
            ledger: this.ledger,
            random: random.fork('a2a'),
            count: Math.max(2, Math.round(options.turns / 20)),
            windowMs: this.windowMs,
            followTimeoutMs: 90_000,
          },
          outside.pushes.url,
        ),
      ),
      track(
        'mcp',
        runMcpClient({
          apis: new Apis(this.urls),
          ledger: this.ledger,
          random: random.fork('mcp'),
          count: Math.max(2, Math.round(options.turns / 20)),
          windowMs: this.windowMs,
          followTimeoutMs: 90_000,
        }),
      ),
      // One image round per 40 turns, at least two: upload, a turn carrying it, its reply read aloud.
      track(
        'media',
        runMediaClient({
          apis: new Apis(this.urls),
          ledger: this.ledger,
          random: random.fork('media'),
          count: Math.max(2, Math.round(options.turns / 40)),
          windowMs: this.windowMs,
          followTimeoutMs: 90_000,
        }),
      ),
      track(
        'telegram',
        outside.telegram?.run(this.urls, random.fork('telegram'), people, messages, this.windowMs),
      ),
      track(
        'slack',
        outside.slack?.run(this.urls, random.fork('slack'), people, messages, this.windowMs),
      ),
    ]);
  }

  /** The clients still running, by name (a session loop is `session <index>`). */
  readonly running = new Set<string>();

  private async track(name: string, client: Promise<void>): Promise<void> {
    this.running.add(name);
    try {
      await client;
    } finally {
      this.running.delete(name);
    }
  }

  /** Client requests that got no answer, a 5xx or timed out (each then retried). */
  get failedAttempts(): number {
    return this.clientApis.reduce((sum, apis) => sum + apis.failures, 0);
  }
}

/** Executions the mission client dispatches: one for every ten turns, at least four. */
function executionsFor(options: SoakOptions): number {
  return Math.max(4, Math.round(options.turns / 10));
}
