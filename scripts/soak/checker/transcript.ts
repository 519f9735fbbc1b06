import { stoppedPrefix } from '../budgets.js';
import type { Ledger } from '../ledger.js';
import { echoOf } from '../messages.js';
import { turnIdsOf, where, type Findings, type Journal } from './findings.js';
import type { EventRow, MessageRow } from './snapshot.js';

/**
 * The transcript against the journal: one user row and one `message` event per turn, one
 * assistant row per `done` (and none without one), each reply equal to its `done`.
 */
export function checkTranscript(journal: Journal, findings: Findings): void {
  const { messages, turns } = journal.snapshot;
  const byKey = new Map<string, MessageRow[]>();
  for (const message of messages) {
    if (message.turn_id === null) continue;
    const key = `${message.session_id} ${message.turn_id} ${message.role}`;
    let rows = byKey.get(key);
    if (!rows) byKey.set(key, (rows = []));
    rows.push(message);
  }
  for (const [key, rows] of byKey) {
    if (rows.length > 1) {
      findings.add(
        'doubled',
        'transcript row once',
        `${rows.length} transcript rows for (session turn role) ${key}`,
      );
    }
  }

  const userEvents = new Map<string, EventRow[]>();
  for (const event of journal.snapshot.events) {
    if (event.type !== 'message' || event.turn_id === null) continue;
    if (event.payload?.message?.role !== 'user') continue;
    let list = userEvents.get(event.turn_id);
    if (!list) userEvents.set(event.turn_id, (list = []));
    list.push(event);
  }
  const messageIds = new Map(messages.map((message) => [message.message_id, message]));
  // A turn's user message is the transcript row at the sequence it was admitted at.
  const at = (sessionId: string, sequence: number) => `${sessionId} ${Number(sequence)}`;
  const bySequence = new Map(
    messages.map((message) => [at(message.session_id, message.sequence), message]),
  );
  for (const turn of turns) {
    const row = bySequence.get(at(turn.session_id, turn.admitted_sequence));
    if (!row || row.role !== 'user' || row.turn_id !== turn.turn_id) {
      findings.add(
        'lost',
        'user message kept',
        `turn ${turn.turn_id} has no user transcript row at ${turn.admitted_sequence}`,
      );
    }
    const events = userEvents.get(turn.turn_id) ?? [];
    if (events.length !== 1) {
      findings.add(
        events.length === 0 ? 'lost' : 'doubled',
        'user message journaled once',
        `turn ${turn.turn_id} has ${events.length} user message events`,
      );
    }
  }

  const replies = new Map<string, number>();
  for (const message of messages) {
    if (message.role === 'assistant' && message.turn_id !== null) {
      replies.set(message.session_id, (replies.get(message.session_id) ?? 0) + 1);
    }
  }
  const dones = new Map<string, number>();
  // What the attempt that finished streamed, per session: a `done` is rebuilt from its
  // transcript row, so "kept as sent" means the row holds what clients saw streamed.
  let streamed = { session: '', text: '', tools: false };
  for (const event of journal.snapshot.events) {
    if (
      event.session_id !== streamed.session ||
      ['turn_started', 'attempt_reset'].includes(event.type)
    ) {
      streamed = { session: event.session_id, text: '', tools: false };
    }
    if (event.type === 'text_delta') streamed.text += String(event.payload?.delta ?? '');
    if (event.type === 'tool_call') streamed.tools = true;
    if (event.type !== 'done') continue;
    dones.set(event.session_id, (dones.get(event.session_id) ?? 0) + 1);
    const final = event.payload?.final_message as { id?: string; content?: string } | undefined;
    const row = final?.id === undefined ? undefined : messageIds.get(final.id);
    if (
      !row ||
      row.role !== 'assistant' ||
      row.turn_id !== event.turn_id ||
      row.content !== final?.content ||
      // Steps with tool calls join their texts; a single-step reply is its deltas exactly,
      // except the runtime's own reply when a turn stops for want of budget: committed
      // with its `done`, never streamed.
      (!streamed.tools && row.content !== streamed.text && !stoppedForBudget(row.content))
    ) {
      findings.add(
        'mismatch',
        'reply kept as sent',
        `${where(event)}: its final message is not the transcript's reply`,
      );
    }
  }
  for (const session of journal.snapshot.sessions) {
    const replyCount = replies.get(session.session_id) ?? 0;
    const doneCount = dones.get(session.session_id) ?? 0;
    if (replyCount !== doneCount) {
      findings.add(
        replyCount > doneCount ? 'doubled' : 'lost',
        'one reply per done',
        `session ${session.session_id}: ${replyCount} assistant replies for ${doneCount} done events`,
      );
    }
  }
}

/**
 * A plain turn answered alone: the demo model's reply is fully determined (`You said: …`),
 * and the deltas of the attempt that finished must spell exactly it. A reply stitched
 * from two attempts, or answering another turn, fails here.
 */
export function checkReplies(journal: Journal, ledger: Ledger, findings: Findings): void {
  for (const [sessionId, events] of journal.eventsBySession) {
    let deltas: string[] = [];
    for (const event of events) {
      if (event.type === 'turn_started' || event.type === 'attempt_reset') deltas = [];
      if (event.type === 'text_delta') deltas.push(String(event.payload?.delta ?? ''));
      if (event.type !== 'done') continue;
      const named = turnIdsOf(event);
      const turn = named.length === 1 ? ledger.turns.get(named[0] as string) : undefined;
      if (turn?.kind === 'plain') {
        const expected = echoOf(turn.message);
        const content = String(event.payload?.final_message?.content ?? '');
        if (content !== expected) {
          findings.add(
            'mismatch',
            'reply is the echo',
            `${where(event)}: reply "${clip(content)}" to ${turn.turnId} is not "${clip(expected)}"`,
          );
        } else if (deltas.join('') !== content) {
          findings.add(
            'mismatch',
            'deltas spell the reply',
            `${where(event)} in ${sessionId}: the last attempt's deltas spell "${clip(deltas.join(''))}"`,
          );
        }
      }
      deltas = [];
    }
  }
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function stoppedForBudget(content: string): boolean {
  return content.startsWith(stoppedPrefix);
}
