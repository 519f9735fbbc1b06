import { useState } from 'react';
import type { AgentInfo, ParleyClient } from 'parley/client';
import type { Person } from '../conversation/authors';
import type { ConversationState, Item, OptionOffer } from '../conversation/model';
import type { PendingPost } from '../conversation/useConversation';
import { Markdown } from '../markdown';
import { sentAttachments } from '../media';
import { explainError, explainRequestError, formatCost } from '../words';
import { Avatar } from './Avatar';
import { InputCard } from './InputCard';
import { AttachedImages, SpeakButton } from './MessageMedia';

interface ThreadProps {
  client: ParleyClient;
  sessionId: string;
  state: ConversationState;
  pending: PendingPost[];
  me: string;
  /** Other people's profiles by user id (a room): their display names and avatars. */
  people: Map<string, Person>;
  agent: AgentInfo | undefined;
  agentName: string;
  writing: boolean;
  /** The final message of each answered turn (its reply can be played). */
  replyIds: Record<string, string>;
  onRetry: (post: PendingPost) => void;
  /** Kept in view as the thread grows. */
  endRef: React.RefObject<HTMLDivElement | null>;
}

/** The conversation's timeline: messages, streaming replies, tools, cards and outcomes. */
export function Thread(props: ThreadProps) {
  const { state } = props;
  // A call that waits for a person is shown by its card; its own line appears with the result.
  const asked = new Set(
    state.items.flatMap((item) => (item.kind === 'input' && item.callId ? [item.callId] : [])),
  );
  const lastTextOfTurn = new Map<string, string>();
  for (const item of state.items)
    if (item.kind === 'text') lastTextOfTurn.set(item.turnId, item.key);
  // A message's images as the journal names them; from journals written before it did, those
  // of the turns this browser sent.
  const sent = sentAttachments(props.sessionId);
  return (
    <div className="thread" role="log" aria-label="Conversation" aria-live="polite">
      {state.items.map((item) => (
        <ThreadItem
          key={item.key}
          item={item}
          {...props}
          showUsage={item.kind === 'text' && lastTextOfTurn.get(item.turnId) === item.key}
          asked={item.kind === 'tool' && asked.has(item.callId)}
          images={
            item.kind !== 'message'
              ? []
              : (item.attachments ?? (item.turnId ? sent[item.turnId] : undefined) ?? [])
          }
        />
      ))}
      {props.pending.map((post) => (
        <article
          key={post.turnId}
          className={`message mine ${post.status}`}
          aria-label="Your message"
        >
          <div className="bubble">
            <div className="author">You</div>
            <Markdown source={post.text} />
            <AttachedImages
              client={props.client}
              sessionId={props.sessionId}
              attachmentIds={post.attachments ?? []}
            />
            {post.status === 'sending' ? (
              <span className="muted small">Sending…</span>
            ) : (
              <div className="row small">
                <span className="error">Not sent: {post.error}</span>
                <button type="button" onClick={() => props.onRetry(post)}>
                  Retry
                </button>
              </div>
            )}
          </div>
        </article>
      ))}
      {props.writing ? (
        <p className="writing" role="status" aria-label={`${props.agentName} is writing`}>
          <span className="dots" aria-hidden="true" /> {props.agentName} is writing…
        </p>
      ) : null}
      <div ref={props.endRef} className="thread-end" />
    </div>
  );
}

function ThreadItem(
  props: ThreadProps & { item: Item; showUsage: boolean; asked: boolean; images: string[] },
) {
  const { item } = props;
  switch (item.kind) {
    case 'message': {
      const mine = item.role === 'user' && item.author === props.me;
      const person = item.role === 'user' && !mine ? props.people.get(item.author) : undefined;
      const name = person?.displayName ?? item.author;
      const who = item.role === 'assistant' ? item.author : mine ? 'You' : name;
      return (
        <article
          className={`message ${item.role} ${mine ? 'mine' : ''}`}
          aria-label={`Message from ${who}`}
        >
          <div className="bubble">
            <div className="author">
              {item.role === 'user' && !mine ? (
                <Avatar name={name} url={person?.avatarUrl} />
              ) : null}
              {item.role === 'assistant' &&
              props.agent?.icon &&
              item.author === props.agent.name ? (
                <Avatar name={who} url={props.agent.icon} />
              ) : null}
              <span title={person?.displayName ? item.author : undefined}>{who}</span>
            </div>
            {item.option ? <p className="muted small">Chose “{item.option.value}”</p> : null}
            {item.content ? <Markdown source={item.content} /> : null}
            <AttachedImages
              client={props.client}
              sessionId={props.sessionId}
              attachmentIds={props.images}
            />
          </div>
        </article>
      );
    }
    case 'text': {
      // A reply read from the transcript is keyed by its message id.
      const messageId =
        props.replyIds[item.turnId] ?? (item.key.startsWith('f:') ? item.key.slice(2) : null);
      return (
        <article className="message assistant" aria-label={`Reply from ${props.agentName}`}>
          <div className="bubble">
            <div className="author">
              {props.agent?.icon && (item.author || props.agent.name) === props.agent.name ? (
                <Avatar name={props.agent.name} url={props.agent.icon} />
              ) : null}
              <span>{item.author || props.agentName}</span>
            </div>
            <Markdown source={item.text} />
            {item.options ? (
              <Options
                client={props.client}
                sessionId={props.sessionId}
                offer={item.options}
                chosen={props.state.chosen[item.options.request_id]}
              />
            ) : null}
            {props.showUsage && props.state.usage[item.turnId] ? (
              <details className="usage">
                <summary>Usage</summary>
                <UsageLine usage={props.state.usage[item.turnId]!} />
              </details>
            ) : null}
            {props.showUsage && messageId ? (
              <SpeakButton
                client={props.client}
                sessionId={props.sessionId}
                messageId={messageId}
              />
            ) : null}
          </div>
        </article>
      );
    }
    case 'tool':
      if (props.asked && !item.result) return null;
      return (
        <section className="card tool" aria-label={`Tool ${item.tool}`}>
          <div className="card-title small">
            Tool <strong>{item.tool}</strong>
          </div>
          {props.asked ? null : (
            <pre className="arguments">{JSON.stringify(item.arguments ?? {}, null, 2)}</pre>
          )}
          {item.result ? (
            <div className={`tool-result ${item.result.ok ? 'ok' : 'no'}`}>
              <span className="small">{item.result.ok ? 'Result' : 'Not run / failed'}</span>
              <pre>
                {typeof item.result.value === 'string'
                  ? item.result.value
                  : JSON.stringify(item.result.value, null, 2)}
              </pre>
            </div>
          ) : null}
        </section>
      );
    case 'input':
      return (
        <InputCard
          client={props.client}
          agent={props.agent}
          request={{
            sessionId: props.sessionId,
            requestId: item.requestId,
            inputKind: item.inputKind,
            tool: item.tool,
            arguments: item.arguments,
            prompt: item.prompt,
            expectedSequence: item.expectedSequence,
            argumentsDigest: item.argumentsDigest,
            deadlineAt: item.deadlineAt,
            escalatedTo: item.escalatedTo,
            reminded: item.reminded,
            provider: item.provider,
            url: item.url,
            resolved: item.resolved,
          }}
        />
      );
    case 'stall':
      return (
        <p className="notice stalled" role="note">
          {item.what === 'tool'
            ? `The tool ${item.tool ?? ''} kept running past its time limit.`
            : 'The reply stopped making progress.'}{' '}
          {item.action === 'retry' ? 'Trying again.' : 'The turn was ended.'}
        </p>
      );
    case 'state':
      return (
        <p className="notice state-change" role="note">
          {item.by === 'admin'
            ? 'An admin updated'
            : item.by === 'user'
              ? 'A user’s app updated'
              : 'The agent updated'}{' '}
          this conversation’s state
          {item.completed ? ' and completed it.' : '.'}
        </p>
      );
    case 'outcome':
      return item.outcome === 'cancelled' ? (
        <p className="notice cancelled" role="note">
          Stopped{item.actor ? ` by ${item.actor === props.me ? 'you' : item.actor}` : ''}. Nothing
          more runs for this turn.
        </p>
      ) : (
        <p className="notice failed" role="note">
          {explainError(item.code, item.message)}
        </p>
      );
  }
}

function UsageLine({
  usage,
}: {
  usage: { input_tokens: number; output_tokens: number; cost_usd: number };
}) {
  return (
    <span className="small muted">
      {usage.input_tokens} tokens in · {usage.output_tokens} tokens out ·{' '}
      {formatCost(usage.cost_usd)}
    </span>
  );
}

/** The options an assistant offered: the first press locks them (for everyone). */
function Options(props: {
  client: ParleyClient;
  sessionId: string;
  offer: OptionOffer;
  chosen: string | undefined;
}) {
  const [pressed, setPressed] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const chosen = props.chosen ?? pressed;
  async function press(value: string) {
    setPressed(value);
    setError(null);
    try {
      await props.client.admitTurn({
        sessionId: props.sessionId,
        message: '',
        option: { request_id: props.offer.request_id, value },
      });
    } catch (failure) {
      const code = (failure as { code?: string }).code;
      if (code !== 'option_locked') setPressed(null);
      setError(explainRequestError(failure));
    }
  }
  return (
    <div className="options" role="group" aria-label="Options">
      {props.offer.choices.map((choice) => (
        <button
          key={choice}
          type="button"
          className={chosen === choice ? 'chosen' : ''}
          aria-pressed={chosen === choice}
          disabled={chosen != null}
          onClick={() => void press(choice)}
        >
          {choice}
        </button>
      ))}
      {error ? (
        <span className="error small" role="alert">
          {error}
        </span>
      ) : null}
    </div>
  );
}

export { UsageLine };
