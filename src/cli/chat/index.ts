import * as readline from 'node:readline';
import { ParleyClient } from '../../client/index.js';
import { Conversation } from './conversation.js';
import { describeError } from './errors.js';
import { pickSession } from './picker.js';
import { Screen } from './screen.js';

/**
 * `parley chat`: a terminal client on the SDK, behaving as PROTOCOL.md §7 asks. It keeps
 * one stream open for the whole chat (so other participants' posts show too), prints the
 * reply as it streams, says what the connection is doing so the screen is never silent,
 * asks a person for every approval, and cancels with the cancel command, never by
 * dropping the stream.
 *
 * Ctrl-C: while a turn runs, the first cancels it and a second quits; when idle, quits.
 *
 * The parts: picker.ts chooses or creates the session, conversation.ts follows it (sending,
 * streaming, cancelling), inputs.ts answers approvals and questions, screen.ts draws.
 */
export interface ChatOptions {
  url?: string | undefined;
  key?: string | undefined;
  session?: string | undefined;
  agent?: string | undefined;
}

export async function chatCommand(options: ChatOptions): Promise<number> {
  const url = (options.url ?? process.env.PARLEY_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
  const client = new ParleyClient({
    baseUrl: url,
    apiKey: options.key ?? process.env.PARLEY_API_KEY,
  });
  const chat = new Chat(client, url, options);
  return chat.run();
}

/** The chat's lifetime: start-up, the lines typed, Ctrl-C and quitting. */
class Chat {
  private readonly rl: readline.Interface;
  private readonly screen: Screen;
  private readonly conversation: Conversation;
  private finish: (code: number) => void = () => {};

  constructor(
    private readonly client: ParleyClient,
    private readonly url: string,
    private readonly options: ChatOptions,
  ) {
    this.rl = readline.createInterface({
      input: process.stdin,
      output: process.stdout,
      terminal: Boolean(process.stdin.isTTY),
    });
    this.screen = new Screen(this.rl);
    this.conversation = new Conversation(client, url, this.screen);
  }

  async run(): Promise<number> {
    const done = new Promise<number>((resolve) => (this.finish = resolve));
    this.rl.on('SIGINT', () => this.interrupt());
    // Without a terminal, readline does not see Ctrl-C: the process gets the signal.
    const onSignal = () => this.interrupt();
    if (!process.stdin.isTTY) process.on('SIGINT', onSignal);
    this.rl.on('close', () => this.quit(0));
    this.rl.on('line', (line) => this.onLine(line));
    try {
      const projection = await pickSession(this.client, this.screen, this.options);
      if (projection) await this.conversation.open(projection);
      return await done;
    } catch (error) {
      this.quit(1);
      throw new Error(describeError(error, this.url));
    } finally {
      process.off('SIGINT', onSignal);
    }
  }

  private onLine(line: string): void {
    const { mode } = this.screen;
    if (mode === 'starting') return; // screen.ask handles start-up answers
    if (mode === 'input') {
      void this.conversation.answer(line);
      return;
    }
    const text = line.trim();
    if (text === '') {
      if (mode === 'idle') this.screen.prompt();
      return;
    }
    if (text === '/quit' || text === '/exit') return this.quit(0);
    void this.conversation.send(text);
  }

  private interrupt(): void {
    if (this.screen.mode === 'starting' || !this.conversation.cancel()) this.quit(0);
  }

  private quit(code: number): void {
    if (this.screen.finished) return;
    this.screen.finished = true;
    this.screen.clearWaitingNotice();
    this.conversation.close();
    this.screen.endReplyLine();
    this.rl.close();
    this.finish(code);
  }
}
