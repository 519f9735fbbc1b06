/**
 * A conversation as the page shows it, rebuilt from the journal (PROTOCOL.md §3) by a pure
 * reducer: the same events in the same order always give the same timeline. Events at or
 * below the cursor are ignored, so a replay after a reconnect can never show anything
 * twice; `attempt_reset` drops the abandoned attempt's unsealed text. Relative imports
 * carry `.js` because the Node test suite imports this file too.
 */
import type { ParleyEvent } from 'parley/client';
import type { ConversationState, Item, OptionOffer } from './items.js';

export { emptyConversation } from './items.js';
export type { ConversationState, Item, OptionOffer, Usage } from './items.js';
export { fromTranscript } from './transcript.js';

type Actor = { user?: string } | null | undefined;

export function reduce(state: ConversationState, event: ParleyEvent): ConversationState {
  if (event.sequence <= state.cursor) return state;
  const next: ConversationState = { ...state, cursor: event.sequence };
  const data = event as ParleyEvent & Record<string, unknown>;
  switch (event.type) {
    case 'message': {
      const message = event.message as typeof event.message & {
        option?: { request_id: string; value: string };
      };
      next.items = [
        ...state.items,
        {
          kind: 'message',
          key: `m:${message.id}`,
          role: message.role,
          author: message.author,
          content: message.content,
          turnId: event.turn_id ?? null,
          option: message.option,
          attachments: message.attachments,
        },
      ];
      if (message.option)
        next.chosen = { ...state.chosen, [message.option.request_id]: message.option.value };
      if (message.role === 'user' && event.turn_id && !state.openTurns.includes(event.turn_id)) {
        next.openTurns = [...state.openTurns, event.turn_id];
      }
      return next;
    }
    case 'turn_started':
      next.activeTurn = event.turn_id;
      next.waiting = false;
      return next;
    case 'text_delta': {
      const items = [...state.items];
      // One segment per model step, even when another participant posts mid-reply.
      const open = items.findLastIndex(
        (item) =>
          item.kind === 'text' && item.turnId === event.turn_id && !item.sealed && !item.final,
      );
      const segment = items[open];
      if (segment && segment.kind === 'text') {
        items[open] = { ...segment, text: segment.text + event.delta };
      } else {
        items.push({
          kind: 'text',
          key: `t:${event.sequence}`,
          turnId: event.turn_id,
          author: '',
          text: event.delta,
          sealed: false,
          final: false,
        });
      }
      next.items = items;
      next.activeTurn = event.turn_id;
      return next;
    }
    case 'attempt_reset':
      next.items = state.items.filter(
        (item) =>
          !(item.kind === 'text' && item.turnId === event.turn_id && !item.sealed && !item.final),
      );
      return next;
    case 'tool_call':
      next.items = [
        ...sealText(state.items, event.turn_id),
        {
          kind: 'tool',
          key: `c:${event.call_id}:${event.sequence}`,
          turnId: event.turn_id ?? '',
          callId: event.call_id,
          tool: event.tool,
          arguments: event.arguments,
        },
      ];
      return next;
    case 'usage':
      next.items = sealText(state.items, event.turn_id);
      if (event.turn_id) {
        const before = state.usage[event.turn_id] ?? {
          input_tokens: 0,
          output_tokens: 0,
          cost_usd: 0,
        };
        next.usage = {
          ...state.usage,
          [event.turn_id]: {
            input_tokens: before.input_tokens + event.input_tokens,
            output_tokens: before.output_tokens + event.output_tokens,
            cost_usd: before.cost_usd + event.cost_usd,
          },
        };
      }
      return next;
    case 'input_required':
      next.items = [
        ...state.items,
        {
          kind: 'input',
          key: `i:${event.request_id}`,
          turnId: event.turn_id ?? '',
          requestId: event.request_id,
          inputKind: event.kind,
          callId: event.call_id,
          tool: event.tool,
          arguments: event.arguments,
          prompt: event.prompt,
          expectedSequence: event.sequence,
          argumentsDigest: event.arguments_digest,
          deadlineAt: event.deadline_at,
          provider: event.provider,
          url: event.url,
        },
      ];
      next.waiting = true;
      next.activeTurn = event.turn_id ?? state.activeTurn;
      return next;
    case 'input_resolved': {
      const actor = (data.actor as Actor)?.user ?? null;
      const expired = typeof data.expired === 'string' ? data.expired : undefined;
      next.items = state.items.map((item) =>
        item.kind === 'input' && item.requestId === event.request_id
          ? {
              ...item,
              resolved: {
                approved: event.approved,
                actor,
                expired,
                ...(event.state === 'timeout' ? { timedOut: true } : {}),
              },
            }
          : item,
      );
      next.waiting = next.items.some((item) => item.kind === 'input' && !item.resolved);
      return next;
    }
    case 'input_escalated':
    case 'input_reminder':
      next.items = state.items.map((item) =>
        item.kind === 'input' && item.requestId === event.request_id
          ? event.type === 'input_escalated'
            ? { ...item, escalatedTo: [...(item.escalatedTo ?? []), event.to] }
            : { ...item, reminded: true }
          : item,
      );
      return next;
    case 'tool_result': {
      let matched = false;
      const items = [...state.items];
      for (let index = items.length - 1; index >= 0; index--) {
        const item = items[index];
        if (item && item.kind === 'tool' && item.callId === event.call_id && !item.result) {
          items[index] = {
            ...item,
            result: { ok: event.ok, value: event.ok ? event.result : event.error },
          };
          matched = true;
          break;
        }
      }
      next.items = matched ? items : state.items;
      return next;
    }
    case 'done': {
      const final = event.final_message as typeof event.final_message & { options?: OptionOffer };
      const turnText = state.items.filter(
        (item): item is Extract<Item, { kind: 'text' }> =>
          item.kind === 'text' && item.turnId === event.turn_id && !item.final,
      );
      const streamed = turnText
        .map((item) => item.text)
        .filter((text) => text.trim().length > 0)
        .join('\n\n');
      // The visible reply is the final message: it differs from what streamed when the
      // agent has a completion_text, and then it replaces the streamed text.
      const keep = streamed === final.content;
      const items = state.items
        .filter((item) => keep || !(item.kind === 'text' && item.turnId === event.turn_id))
        .map((item) =>
          item.kind === 'text' && item.turnId === event.turn_id ? { ...item, sealed: true } : item,
        );
      const lastText = [...items]
        .reverse()
        .find(
          (item): item is Extract<Item, { kind: 'text' }> =>
            item.kind === 'text' && item.turnId === event.turn_id,
        );
      if (!keep || !lastText) {
        items.push({
          kind: 'text',
          key: `f:${final.id}`,
          turnId: event.turn_id ?? '',
          author: '',
          text: final.content,
          sealed: true,
          final: true,
          options: final.options,
        });
      } else if (final.options) {
        const index = items.indexOf(lastText);
        items[index] = { ...lastText, options: final.options };
      }
      next.items = items;
      return settle(next, event.turn_ids);
    }
    case 'cancelled':
      next.items = [
        ...sealText(state.items, event.turn_id),
        {
          kind: 'outcome',
          key: `o:${event.sequence}`,
          turnIds: event.turn_ids,
          outcome: 'cancelled',
          actor: (data.actor as Actor)?.user ?? null,
        },
      ];
      return settle(next, event.turn_ids);
    case 'error':
      next.items = [
        ...sealText(state.items, event.turn_id),
        {
          kind: 'outcome',
          key: `o:${event.sequence}`,
          turnIds: event.turn_ids,
          outcome: 'error',
          code: event.code,
          message: event.message,
        },
      ];
      return settle(next, event.turn_ids);
    case 'stalled':
      // Not sealed: the `attempt_reset` of a retry drops the stalled attempt's text.
      next.items = [
        ...state.items,
        {
          kind: 'stall',
          key: `s:${event.sequence}`,
          turnId: event.turn_id,
          what: event.what,
          action: event.action,
          tool: event.tool,
        },
      ];
      return next;
    case 'state_changed':
      next.items = [
        ...state.items,
        {
          kind: 'state',
          key: `d:${event.sequence}`,
          by: event.by,
          completed: event.completed === true,
        },
      ];
      return next;
    case 'panel': {
      next.panelsChangedAt = event.sequence;
      const ephemeral = state.ephemeralPanels;
      if (event.action === 'shown' && event.scope === 'ephemeral' && event.document) {
        next.ephemeralPanels = [
          ...ephemeral,
          {
            id: event.panel_id,
            title: event.title ?? '',
            document: event.document,
            sequence: event.sequence,
          },
        ];
      } else if (event.action === 'updated') {
        next.ephemeralPanels = ephemeral.map((panel) =>
          panel.id === event.panel_id
            ? {
                ...panel,
                title: event.title ?? panel.title,
                document: event.document ?? panel.document,
              }
            : panel,
        );
      }
      return next;
    }
    default:
      return next;
  }
}

/** Text that ended in a tool call or a usage record belongs to a finished model step. */
function sealText(items: Item[], turnId: string | undefined): Item[] {
  return items.map((item) =>
    item.kind === 'text' && item.turnId === turnId && !item.sealed
      ? { ...item, sealed: true }
      : item,
  );
}

function settle(state: ConversationState, turnIds: string[]): ConversationState {
  const openTurns = state.openTurns.filter((turnId) => !turnIds.includes(turnId));
  const ended = state.activeTurn !== null && turnIds.includes(state.activeTurn);
  return {
    ...state,
    openTurns,
    activeTurn: ended ? null : state.activeTurn,
    waiting: ended ? false : state.waiting,
  };
}
