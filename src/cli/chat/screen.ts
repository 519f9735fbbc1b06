import * as readline from 'node:readline';

/**
 * What the keyboard is for right now: answering start-up questions, typing at the idle
 * `you>` prompt, watching a turn stream (no prompt), or answering an input request.
 */
export type Mode = 'starting' | 'idle' | 'turn' | 'input';

/**
 * The terminal: printed lines, state lines (`-- …`), the assistant's reply as it streams,
 * and the prompt, kept from running into each other.
 */
export class Screen {
  mode: Mode = 'starting';
  /** The chat has ended: nothing more is printed, except during start-up. */
  finished = false;
  /** The assistant line being streamed: its text so far, and whether it is on screen. */
  replyText = '';
  replyShown = false;
  typingShown = false;
  private readonly output = process.stdout;
  private midLine = false;
  private waitingTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly rl: readline.Interface) {}

  /** One line of input during start-up; undefined when the chat ended meanwhile. */
  ask(question: string): Promise<string | undefined> {
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

  /** Show the current prompt again. */
  prompt(): void {
    this.rl.prompt();
  }

  showPrompt(prompt: string): void {
    this.rl.setPrompt(prompt);
    this.rl.prompt();
  }

  /** Nothing is running: back to the `you>` prompt. */
  showIdlePrompt(): void {
    this.clearWaitingNotice();
    this.mode = 'idle';
    this.showPrompt('you> ');
  }

  /** Someone's turn is under way: take the idle prompt off the screen while it streams. */
  enterTurn(): void {
    if (this.mode !== 'idle') return;
    if (this.output.isTTY) this.clearPromptLine();
    this.mode = 'turn';
  }

  /** After a short quiet spell with nothing from the assistant, say that we are waiting. */
  armWaitingNotice(): void {
    this.clearWaitingNotice();
    this.waitingTimer = setTimeout(() => {
      this.waitingTimer = null;
      if (this.mode === 'turn' && !this.replyShown && !this.typingShown) {
        this.status('sent; waiting for the assistant...');
      }
    }, 1500);
  }

  clearWaitingNotice(): void {
    if (this.waitingTimer !== null) clearTimeout(this.waitingTimer);
    this.waitingTimer = null;
  }

  /** A piece of the assistant's reply, on its labelled line. */
  appendReply(delta: string): void {
    if (!this.replyShown) {
      this.write('assistant: ');
      this.replyShown = true;
    }
    this.write(delta);
    this.replyText += delta;
  }

  endReplyLine(): void {
    if (this.midLine) this.write('\n');
    this.replyText = '';
    this.replyShown = false;
  }

  /** A state line (`-- …`), printed above the prompt when one is showing. */
  status(text: string): void {
    this.print(`-- ${text}`);
  }

  print(text: string): void {
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
