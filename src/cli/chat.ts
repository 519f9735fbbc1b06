import * as readline from 'node:readline';
import {
  ParleyClient,
  ParleyClientError,
  newClientKey,
  type InputRequiredEvent,
  type ParleyEvent,
  type SessionProjection,
  type StateChange,
  type Subscription,
} from '../client/index.js';

/**
 * `parley chat`: a terminal client on the SDK, behaving as PROTOCOL.md §7 asks. It keeps
 * one stream open for the whole chat (so other participants' posts show too), prints the
 * reply as it streams, says what the connection is doing so the screen is never silent,
 * asks a person for every approval, and cancels with the cancel command, never by
 * dropping the stream.
 *
 * Ctrl-C: while a turn runs, the first cancels it and a second quits; when idle, quits.
 */
export interface ChatOptions {
  url?: string | undefined;
  key?: string | undefined;
  session?: string | undefined;
  agent?: string | undefined;
}

/** A pending question for the person at the keyboard (from the stream or the projection). */
interface InputRequest {
  requestId: string;
  kind: string;
  sequence: number;
  describe: string;
}

type Mode = 'starting' | 'idle' | 'turn' | 'input';

export async function chatCommand(options: ChatOptions): Promise<number> {
  const url = (options.url ?? process.env.PARLEY_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
  const client = new ParleyClient({
    baseUrl: url,
    apiKey: options.key ?? process.env.PARLEY_API_KEY,
  });
  const chat = new Chat(client, url, options);
  return chat.run();
}

class Chat {
  private readonly rl: readline.Interface;
  private readonly output = process.stdout;
  private mode: Mode = 'starting';
  private sessionId = '';
  private subscription: Subscription | null = null;
  /** Turns this terminal admitted that no done, cancelled or error has named yet. */
  private readonly pending = new Set<string>();
  private currentTurn: string | null = null;
  private cancelRequested = false;
  private input: InputRequest | null = null;
  /** The assistant line being streamed: its text so far, and whether it is on screen. */
  private replyText = '';
  private replyShown = false;
  private typingShown = false;
  private midLine = false;
  private everOpen = false;
  private waitingTimer: ReturnType<typeof setTimeout> | null = null;
  private finish: (code: number) => void = () => {};
  private finished = false;

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
      const projection = await this.pickSession();
      if (projection) await this.open(projection);
      return await done;
    } catch (error) {
      this.quit(1);
      throw new Error(describeError(error, this.url));
    } finally {
      process.off('SIGINT', onSignal);
    }
  }

  // ---- choosing a session ------------------------------------------------------------

  private async pickSession(): Promise<SessionProjection | null> {
    if (this.options.session) return this.client.getSession(this.options.session);
    const page = await this.client.listSessions({ limit: 9 });
    if (page.items.length === 0) return this.createSession();
    this.print('Recent sessions:');
    page.items.forEach((session, index) => {
      const title = (session.title ?? '(untitled)').slice(0, 40).padEnd(42);
      this.print(
        `  ${index + 1}) ${title}${session.state.padEnd(16)}${session.agent.padEnd(12)}${session.session_id}`,
      );
    });
    this.print('  n) new session');
    for (;;) {
      const answer = (await this.ask(`Choose a session [n]: `))?.trim().toLowerCase();
      if (answer === undefined) return null;
      if (answer === '' || answer === 'n') return this.createSession();
      const chosen = page.items[Number(answer) - 1];
      if (/^\d+$/.test(answer) && chosen) return this.client.getSession(chosen.session_id);
      this.print(`Type a number from 1 to ${page.items.length}, or n.`);
    }
  }

  private async createSession(): Promise<SessionProjection> {
    const created = await this.client.createSession(
      this.options.agent ? { agent: this.options.agent } : {},
    );
    this.status(`new session ${created.session_id} (agent ${created.agent})`);
    return created;
  }

  /** One line of input during start-up; undefined when the chat ended meanwhile. */
  private ask(question: string): Promise<string | undefined> {
    return new Promise((resolve) => {
      if (this.finished) return resolve(undefined);
      const onClose = () => resolve(undefined);
      this.rl.once('close', onClose);
      this.rl.question(question, (answer) => {
        this.rl.off('close', onClose);
        resolve(this.finished ? undefined : answer);
      });
    });
  }

  // ---- the conversation --------------------------------------------------------------

  private async open(projection: SessionProjection): Promise<void> {
    this.sessionId = projection.session_id;
    this.status(`session ${projection.session_id}, agent ${projection.agent}; Ctrl-C to quit`);
    const transcript = await this.client.listMessages(this.sessionId, { limit: 20 });
    for (const message of [...transcript.items].reverse()) {
      this.print(`${label(message.role, message.author)}: ${message.content}`);
    }
    if (projection.current_turn) this.currentTurn = projection.current_turn.turn_id;
    // A pending question is answered from its own event: replay from just before it.
    const pendingInput = projection.pending_input;
    const after = pendingInput
      ? Math.min(projection.latest_sequence, Math.max(0, pendingInput.expected_sequence - 1))
      : projection.latest_sequence;
    this.subscription = this.client.subscribe(this.sessionId, {
      after,
      stopOnTerminal: false,
      onEvent: (event) => this.onEvent(event),
      onResync: (next) => this.onResync(next),
      onState: (change) => this.onState(change),
      onTyping: () => this.onTyping(),
    });
    if (this.mode === 'starting') this.becomeIdleIfDone();
  }

  private onLine(line: string): void {
    if (this.mode === 'starting') return; // rl.question handles start-up answers
    if (this.mode === 'input') {
      void this.answer(line);
      return;
    }
    const text = line.trim();
    if (text === '') {
      if (this.mode === 'idle') this.rl.prompt();
      return;
    }
    if (text === '/quit' || text === '/exit') return this.quit(0);
    void this.send(text);
  }

  private async send(text: string): Promise<void> {
    const turnId = newClientKey('turn');
    // Before the request: our own message may stream back before the 202 does.
    this.pending.add(turnId);
    this.mode = 'turn';
    this.armWaitingNotice();
    try {
      const admission = await this.client.admitTurn({
        sessionId: this.sessionId,
        message: text,
        turnId,
      });
      if (admission.state === 'stored') {
        this.pending.delete(turnId);
        this.status('posted; your role does not start a reply from the agent');
        this.becomeIdleIfDone();
      }
    } catch (error) {
      this.pending.delete(turnId);
      this.status(`not sent: ${describeError(error, this.url)}`);
      this.becomeIdleIfDone();
    }
  }

  private onEvent(event: ParleyEvent): void {
    switch (event.type) {
      case 'message': {
        const { message } = event;
        // Our own posts are on screen already, as typed.
        if (message.role === 'user' && event.turn_id && this.pending.has(event.turn_id)) return;
        this.endReplyLine();
        this.print(`${label(message.role, message.author)}: ${message.content}`);
        return;
      }
      case 'turn_started':
        this.clearWaitingNotice();
        this.currentTurn = event.turn_id;
        this.enterTurn();
        if (event.attempt > 1) this.status(`the assistant is retrying (attempt ${event.attempt})`);
        return;
      case 'text_delta':
        this.clearWaitingNotice();
        this.enterTurn();
        if (!this.replyShown) {
          this.write('assistant: ');
          this.replyShown = true;
        }
        this.write(event.delta);
        this.replyText += event.delta;
        return;
      case 'attempt_reset':
        if (this.replyText !== '') {
          this.status(
            'the reply was interrupted on the server and starts over: disregard the text above',
          );
        }
        this.replyText = '';
        this.replyShown = false;
        return;
      case 'tool_call':
        this.status(`tool call: ${event.tool} ${JSON.stringify(event.arguments)}`);
        return;
      case 'tool_result':
        this.status(`tool ${event.tool}: ${event.ok ? 'done' : 'failed'}`);
        return;
      case 'input_required':
        this.clearWaitingNotice();
        this.askInput(fromEvent(event));
        return;
      case 'input_resolved':
        if (this.input?.requestId === event.request_id) this.input = null;
        if (this.mode === 'input') this.mode = 'turn';
        this.status(`${event.approved ? 'approved' : 'rejected'} by ${event.actor.user}`);
        return;
      case 'usage':
        return;
      case 'done':
        if (this.replyText === '') {
          this.print(`assistant: ${event.final_message.content}`);
        }
        this.endTurns(event.turn_ids);
        return;
      case 'cancelled':
        this.status('the turn was cancelled');
        this.endTurns(event.turn_ids);
        return;
      case 'error':
        this.status(`the turn failed: ${event.message} (${event.code})`);
        this.endTurns(event.turn_ids);
        return;
    }
  }

  private endTurns(turnIds: string[]): void {
    this.endReplyLine();
    for (const turnId of turnIds) this.pending.delete(turnId);
    this.currentTurn = null;
    this.cancelRequested = false;
    this.typingShown = false;
    if (this.input && this.mode !== 'input') this.input = null;
    this.becomeIdleIfDone();
  }

  private async onResync(projection: SessionProjection): Promise<void> {
    const before = this.subscription?.cursor ?? 0;
    this.endReplyLine();
    this.status(
      `resynced: history up to sequence ${projection.latest_sequence} is no longer streamable; continuing from there`,
    );
    // Nothing in the missing range may be assumed: show what the transcript says happened.
    try {
      const missed = await this.client.listMessages(this.sessionId, { limit: 20 });
      for (const message of [...missed.items].reverse()) {
        if (message.sequence > before) {
          this.print(`${label(message.role, message.author)}: ${message.content}`);
        }
      }
    } catch (error) {
      this.status(`could not load the missed messages: ${describeError(error, this.url)}`);
    }
    this.currentTurn = projection.current_turn?.turn_id ?? null;
    if (!projection.current_turn && projection.state !== 'queued') this.pending.clear();
    const pendingInput = projection.pending_input;
    if (pendingInput) {
      this.askInput({
        requestId: pendingInput.request_id,
        kind: pendingInput.kind,
        sequence: pendingInput.expected_sequence,
        describe: `${pendingInput.kind} needed${typeof pendingInput.prompt === 'string' ? `: ${pendingInput.prompt}` : ''}`,
      });
    } else {
      this.becomeIdleIfDone();
    }
  }

  private onState(change: StateChange): void {
    switch (change.state) {
      case 'connecting':
        this.status(`connecting to ${this.url}...`);
        return;
      case 'open':
        this.status(this.everOpen ? 'reconnected' : 'connected');
        this.everOpen = true;
        return;
      case 'reconnecting': {
        const attempt = change.attempt ?? 1;
        const why = change.error?.message ?? 'unknown';
        const wait = `${((change.delayMs ?? 0) / 1000).toFixed(1)} s`;
        this.status(
          attempt === 1
            ? `connection lost (${why}); reconnecting in ${wait}`
            : `still no connection (${why}); reconnecting in ${wait} (attempt ${attempt})`,
        );
        return;
      }
      case 'closed':
        if (change.reason === 'fatal' || change.reason === 'handler_error') {
          this.status(`the stream stopped: ${change.error?.message ?? change.reason}`);
        }
        return;
    }
  }

  private onTyping(): void {
    if (this.typingShown || this.replyText !== '' || this.mode === 'input') return;
    this.clearWaitingNotice();
    this.typingShown = true;
    this.status('assistant is writing...');
  }

  // ---- approvals and questions -------------------------------------------------------

  private askInput(request: InputRequest): void {
    this.endReplyLine();
    this.input = request;
    this.mode = 'input';
    this.status(request.describe);
    this.rl.setPrompt(
      request.kind === 'question'
        ? 'your answer: '
        : 'approve? y/n, optionally followed by a reason: ',
    );
    this.rl.prompt();
  }

  private async answer(line: string): Promise<void> {
    const request = this.input;
    if (!request) return;
    let approved = true;
    let response: Record<string, unknown> | undefined;
    if (request.kind === 'question') {
      response = { answer: line.trim() };
    } else {
      const match = /^\s*(y|yes|n|no)\b[\s,:;-]*(.*)$/i.exec(line);
      if (!match) {
        this.rl.prompt();
        return;
      }
      approved = (match[1] ?? '').toLowerCase().startsWith('y');
      const reason = (match[2] ?? '').trim();
      if (reason !== '') response = { reason };
    }
    this.mode = 'turn';
    try {
      await this.client.answerInput(this.sessionId, request.requestId, {
        expectedSequence: request.sequence,
        approved,
        response,
      });
      this.input = null;
      this.status(approved ? 'approval sent' : 'rejection sent');
    } catch (error) {
      if (error instanceof ParleyClientError && (error.status === 409 || error.status === 404)) {
        // Answered elsewhere, or no longer pending: the stream shows what happened.
        this.input = null;
        this.status(`not needed any more: ${describeError(error, this.url)}`);
        this.becomeIdleIfDone();
      } else {
        this.status(`could not send the answer: ${describeError(error, this.url)}`);
        this.askInput(request);
      }
    }
  }

  // ---- Ctrl-C ------------------------------------------------------------------------

  private interrupt(): void {
    const target = this.currentTurn ?? [...this.pending].at(-1) ?? null;
    if (this.mode === 'starting' || this.cancelRequested || target === null) return this.quit(0);
    this.cancelRequested = true;
    this.status('cancelling the turn (Ctrl-C again to quit)');
    this.client.cancelTurn(this.sessionId, target).then(
      (result) => this.status(`cancel: ${result.result} (turn ${result.state})`),
      (error: unknown) => this.status(`could not cancel: ${describeError(error, this.url)}`),
    );
  }

  private quit(code: number): void {
    if (this.finished) return;
    this.finished = true;
    this.clearWaitingNotice();
    this.subscription?.close();
    this.endReplyLine();
    this.rl.close();
    this.finish(code);
  }

  // ---- the screen --------------------------------------------------------------------

  private becomeIdleIfDone(): void {
    if (this.finished || this.mode === 'input') return;
    if (this.pending.size > 0 || this.currentTurn !== null) {
      this.mode = 'turn';
      return;
    }
    this.clearWaitingNotice();
    this.mode = 'idle';
    this.rl.setPrompt('you> ');
    this.rl.prompt();
  }

  /** After a short quiet spell with nothing from the assistant, say that we are waiting. */
  private armWaitingNotice(): void {
    this.clearWaitingNotice();
    this.waitingTimer = setTimeout(() => {
      this.waitingTimer = null;
      if (this.mode === 'turn' && !this.replyShown && !this.typingShown) {
        this.status('sent; waiting for the assistant...');
      }
    }, 1500);
  }

  private clearWaitingNotice(): void {
    if (this.waitingTimer !== null) clearTimeout(this.waitingTimer);
    this.waitingTimer = null;
  }

  private endReplyLine(): void {
    if (this.midLine) this.write('\n');
    this.replyText = '';
    this.replyShown = false;
  }

  /** A state line (`-- …`), printed above the prompt when one is showing. */
  private status(text: string): void {
    this.print(`-- ${text}`);
  }

  private print(text: string): void {
    if (this.finished && this.mode !== 'starting') return;
    const promptShowing = this.mode === 'idle' || this.mode === 'input';
    if (promptShowing && this.output.isTTY) {
      this.clearPromptLine();
      this.output.write(`${text}\n`);
      this.rl.prompt(true);
      return;
    }
    if (this.midLine) {
      this.write('\n');
      // The rest of the reply continues on a fresh, labelled line.
      if (this.replyShown) this.replyShown = false;
    }
    this.write(`${text}\n`);
  }

  /** Someone's turn is under way: take the idle prompt off the screen while it streams. */
  private enterTurn(): void {
    if (this.mode !== 'idle') return;
    if (this.output.isTTY) this.clearPromptLine();
    this.mode = 'turn';
  }

  private clearPromptLine(): void {
    readline.clearLine(this.output, 0);
    readline.cursorTo(this.output, 0);
  }

  private write(text: string): void {
    if (text === '') return;
    this.output.write(text);
    this.midLine = !text.endsWith('\n');
  }
}

function fromEvent(event: InputRequiredEvent): InputRequest {
  const what =
    event.kind === 'approval'
      ? `approval needed: ${event.tool ?? 'a tool'} ${JSON.stringify(event.arguments ?? {})}`
      : event.kind === 'budget_extension'
        ? `the turn used up its budget${event.prompt ? `: ${event.prompt}` : ''}; extend it?`
        : `the assistant asks: ${event.prompt ?? '(no question text)'}`;
  return {
    requestId: event.request_id,
    kind: event.kind,
    sequence: event.sequence,
    describe: what,
  };
}

function label(role: string, author: string): string {
  return role === 'user' ? author : role;
}

function describeError(error: unknown, url: string): string {
  if (error instanceof ParleyClientError) {
    if (error.code === 'network_error') {
      return `cannot reach a Parley server at ${url} (is it running? use --url)`;
    }
    return `${error.code}: ${error.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}
