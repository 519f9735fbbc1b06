import { Actions, Button, Card, CardText, type AdapterPostableMessage } from 'chat';
import {
  actionIds,
  approvalButtonValue,
  type ApprovalCard,
  type ReplyContent,
  type ReplyText,
} from './content.js';

/** Longest text Parley puts in one platform message (Slack's section limit is 3000). */
const maxText = 2900;

function clip(text: string): string {
  return text.length <= maxText ? text : `${text.slice(0, maxText - 1)}…`;
}

/** The visible text of a reply: its text and how it ended. */
export function replyText(reply: ReplyText): string {
  const parts = reply.text === '' ? [] : [reply.text];
  if (reply.status === 'error') parts.push(`⚠️ ${reply.error ?? 'The agent could not answer.'}`);
  if (reply.status === 'cancelled') parts.push('_(cancelled)_');
  if (reply.options?.chosen !== undefined) parts.push(`✓ ${reply.options.chosen}`);
  return parts.join('\n\n');
}

/**
 * The platform message for an outbox row: markdown for text, a card (Block Kit, Card v2,
 * Discord components, an inline keyboard, an Adaptive Card: the SDK converts it) where
 * there are buttons. Buttons carry the row's id, so a press finds the request it answers.
 * `textInCard: false` leaves the text out of a card added to an existing text message
 * (Google Chat shows a message's text and its cards together).
 */
export function render(
  replyId: string,
  content: ReplyContent,
  options: { textInCard: boolean } = { textInCard: true },
): AdapterPostableMessage | null {
  if (content.type === 'notice') return { markdown: clip(content.text) };
  if (content.type === 'approval') return approvalCard(replyId, content);
  const text = replyText(content);
  const offered = content.options;
  if (offered && offered.chosen === undefined && content.status === 'done') {
    return Card({
      children: [
        ...(options.textInCard && text !== '' ? [CardText(clip(text))] : []),
        Actions(
          offered.choices.map((choice, index) =>
            Button({ id: actionIds.option, value: `${replyId}.${index}`, label: choice }),
          ),
        ),
      ],
    });
  }
  return text === '' ? null : { markdown: clip(text) };
}

function approvalCard(replyId: string, card: ApprovalCard): AdapterPostableMessage {
  const title =
    card.kind === 'approval'
      ? `Approve ${card.tool ?? 'this call'}?`
      : card.kind === 'budget_extension'
        ? 'Extend the budget?'
        : card.kind === 'reconciliation'
          ? `Did this call of ${card.tool ?? 'a tool'} take effect?`
          : card.kind === 'external_auth'
            ? 'Access needed'
            : 'Question';
  const details: string[] = [];
  if (card.prompt) details.push(card.prompt);
  if (
    (card.kind === 'approval' || card.kind === 'reconciliation') &&
    card.arguments !== undefined
  ) {
    details.push(`\`${clip(JSON.stringify(card.arguments)).slice(0, 1500)}\``);
  }
  if (card.kind === 'question' && !card.resolution)
    details.push('_Reply in this thread to answer._');
  if (card.deadline_at !== undefined && !card.resolution) details.push(deadlineText(card));
  // A credential reference is given in the web app, never typed into a chat.
  if (card.kind === 'external_auth' && !card.resolution)
    details.push('_Answer in the web app (its inbox) with the credential reference._');
  const children = details.length > 0 ? [CardText(clip(details.join('\n\n')))] : [];
  const resolution = card.resolution;
  if (resolution) {
    const by = resolution.actor ?? 'someone';
    const outcome = resolution.expired
      ? `Expired (${resolution.expired})`
      : resolution.state === 'timeout'
        ? timeoutText(card, resolution.approved)
        : card.kind === 'question'
          ? `Answered by ${by}`
          : card.kind === 'reconciliation'
            ? resolution.approved
              ? `It happened, says ${by}`
              : `It did not happen, says ${by}: it runs again`
            : `${resolution.approved ? '✅ Approved' : '❌ Rejected'} by ${by}`;
    return Card({ title, children: [...children, CardText(outcome)] });
  }
  if (card.kind === 'question' || card.kind === 'external_auth') return Card({ title, children });
  // "Reject" would read as "do not do it", but a reconciliation's no runs the call again.
  const [yes, no] =
    card.kind === 'reconciliation'
      ? ['Yes, it happened', 'No, run it again']
      : ['Approve', 'Reject'];
  // The digest of the arguments shown: a press refers to exactly them.
  const value = approvalButtonValue(replyId, card);
  return Card({
    title,
    children: [
      ...children,
      Actions([
        Button({ id: actionIds.approve, value, label: yes, style: 'primary' }),
        Button({ id: actionIds.reject, value, label: no, style: 'danger' }),
      ]),
    ],
  });
}

/** A deadline as every platform shows it: to the minute, in UTC. */
function shownTime(iso: string): string {
  const time = new Date(iso);
  return Number.isNaN(time.getTime())
    ? iso
    : `${time.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** What happens if nobody answers by the card's deadline. */
function deadlineText(card: ApprovalCard): string {
  const by = `_Answer by ${shownTime(card.deadline_at as string)}`;
  if (card.kind === 'question') return `${by}: then the agent goes on without an answer._`;
  if (card.kind === 'budget_extension') return `${by}: then it counts as refused._`;
  return `${by}: then its default applies._`;
}

/** How a request its deadline resolved ended. */
function timeoutText(card: ApprovalCard, approved: boolean): string {
  if (card.kind === 'question') return 'Nobody answered in time';
  if (card.kind === 'budget_extension') return 'Not answered in time: refused';
  return approved
    ? 'Not answered in time: approved (its default)'
    : 'Not answered in time: rejected (its default)';
}
