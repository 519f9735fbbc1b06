import type { ParleyEvent } from '../../protocol/events.js';
import type { OutboxRow, ReplyText } from './content.js';

/** The thread's fold state: which reply is open, whether a worker holds the session. */
export interface FoldState {
  openReplyId: string | null;
  typing: boolean;
}

/** Rows the events may touch: the open reply, and rows by request id. */
export interface FoldRows {
  byId: Map<string, OutboxRow>;
  byRequest: Map<string, OutboxRow>;
}

/**
 * Folds journal events into the thread's outbox rows (pure: the caller loads the rows
 * and writes back every row in `touched`). A reply row collects its turn's text as it
 * streams; `attempt_reset` empties it, so the platform message is rewritten by the next
 * text rather than a second message posted; an input request closes the reply and opens
 * an approval card; `done` sets the final text (the journal's, which is authoritative)
 * and its options.
 */
export function fold(
  state: FoldState,
  events: ParleyEvent[],
  rows: FoldRows,
  newId: () => string,
): { state: FoldState; touched: Set<OutboxRow> } {
  const touched = new Set<OutboxRow>();
  let { openReplyId, typing } = state;
  const change = (row: OutboxRow) => {
    row.version += 1;
    touched.add(row);
  };
  const create = (row: Omit<OutboxRow, 'reply_id' | 'platform_message_id' | 'state'>) => {
    const created: OutboxRow = {
      ...row,
      reply_id: newId(),
      platform_message_id: null,
      state: 'pending',
    };
    rows.byId.set(created.reply_id, created);
    if (created.request_id) rows.byRequest.set(created.request_id, created);
    touched.add(created);
    return created;
  };
  const open = (turnId: string | null): OutboxRow => {
    const existing = openReplyId === null ? undefined : rows.byId.get(openReplyId);
    if (existing) return existing;
    const created = create({
      kind: 'reply',
      turn_id: turnId,
      request_id: null,
      content: { type: 'reply', text: '', status: 'streaming' },
      version: 0,
      final: false,
    });
    openReplyId = created.reply_id;
    return created;
  };
  /** Ends the open reply; one with nothing shown and nothing to show is simply dropped. */
  const close = (row: OutboxRow) => {
    row.final = true;
    touched.add(row);
    const reply = row.content as ReplyText;
    if (reply.text === '' && reply.status === 'streaming' && row.platform_message_id === null) {
      row.state = 'delivered';
    }
    openReplyId = null;
  };

  for (const event of events) {
    switch (event.type) {
      case 'message': {
        const { message } = event;
        if (message.option) {
          const offered = rows.byRequest.get(message.option.request_id);
          const reply = offered?.content;
          if (offered && reply?.type === 'reply' && reply.options) {
            reply.options.chosen = message.option.value;
            offered.final = true;
            change(offered);
          }
        } else if (message.role === 'assistant' && event.turn_id === undefined) {
          create({
            kind: 'notice',
            turn_id: null,
            request_id: null,
            content: { type: 'notice', text: message.content },
            version: 1,
            final: true,
          });
        }
        break;
      }
      case 'turn_started':
        typing = true;
        open(event.turn_id);
        break;
      case 'text_delta': {
        const row = open(event.turn_id);
        (row.content as ReplyText).text += event.delta;
        change(row);
        break;
      }
      case 'attempt_reset': {
        const row = openReplyId === null ? undefined : rows.byId.get(openReplyId);
        const reply = row?.content as ReplyText | undefined;
        if (row && reply && reply.text !== '') {
          reply.text = '';
          change(row);
        }
        break;
      }
      case 'input_required': {
        typing = false;
        const row = openReplyId === null ? undefined : rows.byId.get(openReplyId);
        if (row) close(row);
        create({
          kind: 'approval',
          turn_id: event.turn_id,
          request_id: event.request_id,
          content: {
            type: 'approval',
            kind: event.kind,
            request_id: event.request_id,
            expected_sequence: event.sequence,
            ...(event.tool === undefined ? {} : { tool: event.tool }),
            ...(event.arguments === undefined ? {} : { arguments: event.arguments }),
            ...(event.prompt === undefined ? {} : { prompt: event.prompt }),
            ...(event.arguments_digest === undefined
              ? {}
              : { arguments_digest: event.arguments_digest }),
            ...(event.deadline_at === undefined ? {} : { deadline_at: event.deadline_at }),
          },
          version: 1,
          final: false,
        });
        break;
      }
      case 'input_resolved': {
        const card = rows.byRequest.get(event.request_id);
        if (card?.content.type === 'approval') {
          card.content.resolution = {
            approved: event.approved,
            actor: event.actor?.user ?? null,
            ...(event.expired === undefined ? {} : { expired: event.expired }),
            ...(event.state === undefined ? {} : { state: event.state }),
          };
          card.final = true;
          change(card);
        }
        break;
      }
      case 'input_escalated':
      case 'input_reminder': {
        // Said in the thread as a message of its own: a new message is what notifies.
        const card = rows.byRequest.get(event.request_id);
        const tool = card?.content.type === 'approval' ? card.content.tool : undefined;
        const what = tool === undefined ? 'A request' : `The approval of ${tool}`;
        create({
          kind: 'notice',
          turn_id: event.turn_id,
          request_id: null,
          content: {
            type: 'notice',
            text:
              event.type === 'input_escalated'
                ? `${what} is escalated to ${event.to}: it may answer it now.`
                : `Reminder — ${what} still waits for an answer: its default applies at ${event.deadline_at}.`,
          },
          version: 1,
          final: true,
        });
        break;
      }
      case 'done': {
        typing = false;
        const row = open(event.turn_id);
        const reply = row.content as ReplyText;
        reply.text = event.final_message.content;
        reply.status = 'done';
        const options = event.final_message.options;
        if (options) {
          reply.options = { request_id: options.request_id, choices: options.choices };
          row.request_id = options.request_id;
          rows.byRequest.set(options.request_id, row);
        }
        row.final = !options;
        change(row);
        openReplyId = null;
        break;
      }
      case 'error': {
        typing = false;
        const row = open(event.turn_id ?? null);
        const reply = row.content as ReplyText;
        reply.status = 'error';
        reply.error = event.message;
        row.final = true;
        change(row);
        openReplyId = null;
        break;
      }
      case 'cancelled': {
        typing = false;
        const row = openReplyId === null ? undefined : rows.byId.get(openReplyId);
        if (row) {
          const reply = row.content as ReplyText;
          if (reply.text !== '' || row.platform_message_id !== null) {
            reply.status = 'cancelled';
            change(row);
          }
          close(row);
        }
        break;
      }
      default:
        break;
    }
  }
  return { state: { openReplyId, typing }, touched };
}
