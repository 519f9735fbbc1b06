import { budgetMessage, stepsMessage } from './budgets.js';
import { effectsMessage } from './effects.js';
import type { TurnKind } from './ledger.js';
import type { Random } from './random.js';

/**
 * What the clients send, by kind of turn. Each message carries its turn_id, so a reply
 * that answers the wrong turn cannot pass for the right one. The demo model echoes words
 * (`You said: ...`), proposes a tool call for `/tool NAME {json}` and fails retryably for
 * `/fail transient N` (src/providers/demo.ts).
 */
const vocabulary = [
  'lease',
  'journal',
  'turn',
  'worker',
  'sequence',
  'replay',
  'cursor',
  'token',
  'burst',
  'attempt',
  'reply',
  'durable',
  'session',
  'approval',
  'cancel',
  'retry',
];

/**
 * The share of rounds of each kind (a `follow_up` only ever follows a `supersede`; `media`
 * turns are the media client's, not a session loop's; `steps` turns are the `steps`
 * agent's, `stepsWeights`).
 */
export const roundWeights: Record<
  Exclude<TurnKind, 'follow_up' | 'media' | 'steps' | 'state'>,
  number
> = {
  plain: 39,
  burst: 12,
  approval: 15,
  supersede: 5,
  clock: 5,
  cancel: 12,
  transient: 8,
  effects: 8,
  budget: 5,
  client_tool: 6,
  question: 4,
};

/**
 * The rounds of a session of the `steps` agent (budgets.ts): turns that run out of their
 * step budget, and plain ones (one step is enough for a reply).
 */
export const stepsWeights: Partial<Record<TurnKind, number>> = { steps: 2, plain: 1 };

/** The tool a `client_tool` turn declares (and its client runs: `Round`). */
export const soakClientTool = { name: 'soak_lookup', parameters: { type: 'object' } };

/** The question a `question` turn has the agent ask: names its turn. */
export function questionOf(turnId: string): string {
  return `which ${turnId}?`;
}

/** What the person answers a question: derived from it, so a swapped answer shows. */
export function answerTo(question: unknown): string {
  return `answer to ${typeof question === 'string' ? question : 'nothing'}`;
}

/** What the client's tool answers for a call: derived from its arguments. */
export function lookupOutput(args: unknown): string {
  const key = (args as { key?: unknown } | null)?.key;
  return `looked up ${typeof key === 'string' ? key : 'nothing'}`;
}

export function words(random: Random, count: number): string {
  return Array.from({ length: count }, () => vocabulary[random.int(0, vocabulary.length - 1)]).join(
    ' ',
  );
}

export function messageFor(kind: TurnKind, turnId: string, random: Random): string {
  switch (kind) {
    case 'approval':
    case 'supersede':
      return `/tool calculator {"expression": "${random.int(1, 99)}*${random.int(1, 99)}"}`;
    case 'clock':
      return '/tool clock {}';
    case 'client_tool':
      return `/tool ${soakClientTool.name} {"key": "${turnId}"}`;
    case 'question':
      return `/tool ask_user {"question": "${questionOf(turnId)}"}`;
    case 'effects':
      return effectsMessage(turnId, random);
    case 'budget':
      return budgetMessage();
    case 'steps':
      return stepsMessage(turnId);
    case 'state':
      return `/tool update_state {"set": {"count": ${random.int(100, 999)}, "by": "${turnId}"}}`;
    case 'transient':
      return `/fail transient 1\n${turnId} ${words(random, random.int(6, 14))}`;
    case 'cancel':
      // Long, so a cancel can land while the reply streams.
      return `${turnId} ${words(random, random.int(40, 60))}`;
    case 'plain':
    case 'burst':
    case 'follow_up':
    case 'media':
      return `${turnId} ${words(random, random.int(6, 20))}`;
  }
}

/** The demo model's whole reply to a burst of one plain message. */
export function echoOf(message: string): string {
  return `You said: ${message
    .split(/\s+/)
    .filter((word) => word.length > 0)
    .join(' ')}`;
}
