import { useCallback, useRef, useState } from 'react';
import type { AgentInfo, InboxItem, ParleyClient } from 'parley/client';
import { inboxEvents, useLiveRefresh } from '../live';
import { onLinkClick } from '../router';
import { explainRequestError, timeAgo } from '../words';
import { InputCard } from './InputCard';

/**
 * How often the inbox asks for pending requests while the live stream is down (live, a
 * request made or answered elsewhere shows at once).
 */
export const inboxPollMs = 2000;

/**
 * The approvals inbox: every pending input request of the tenant this person may answer,
 * oldest first, answered in place. An answer given here removes its card at once; one
 * given elsewhere is gone at the next poll.
 */
export function Inbox(props: {
  client: ParleyClient;
  agents: AgentInfo[];
  onCount: (count: number) => void;
}) {
  const { client, onCount } = props;
  const [items, setItems] = useState<InboxItem[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const answered = useRef(new Set<string>());

  const load = useCallback(async () => {
    try {
      const all: InboxItem[] = [];
      let cursor: string | null = null;
      do {
        const page = await client.listInputs({ limit: 200, cursor });
        all.push(...page.items);
        cursor = page.next_cursor;
      } while (cursor && all.length < 1000);
      const shown = all.filter((item) => !answered.current.has(item.request_id));
      setItems(shown);
      onCount(shown.length);
      setError(null);
    } catch (failure) {
      setError(explainRequestError(failure));
    }
  }, [client, onCount]);

  useLiveRefresh(load, inboxEvents, { fallbackMs: inboxPollMs });

  const remove = (requestId: string) => {
    answered.current.add(requestId);
    setItems((current) => {
      const next = (current ?? []).filter((item) => item.request_id !== requestId);
      onCount(next.length);
      return next;
    });
  };

  return (
    <section className="inbox" aria-label="Approvals inbox">
      <h2>Inbox</h2>
      <p className="muted small">
        Requests waiting for a person, oldest first. Answer them here without opening each
        conversation.
      </p>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      {items === null ? <p className="muted">Loading…</p> : null}
      {items !== null && items.length === 0 ? (
        <p className="empty">Nothing is waiting for you.</p>
      ) : null}
      <div className="inbox-items">
        {(items ?? []).map((item) => (
          <InputCard
            key={item.request_id}
            client={client}
            agent={props.agents.find((agent) => agent.name === item.agent)}
            request={{
              sessionId: item.session_id,
              requestId: item.request_id,
              inputKind: item.kind,
              tool: item.tool,
              arguments: item.arguments,
              prompt: item.prompt,
              expectedSequence: item.expected_sequence,
              argumentsDigest: item.arguments_digest,
              deadlineAt: item.deadline_at,
              escalatedTo: item.escalated_to,
              provider: item.provider,
              url: item.url,
            }}
            answerable
            heading={
              <div className="inbox-heading small muted">
                <a href={`/s/${item.session_id}`} onClick={onLinkClick}>
                  {item.session_title ?? 'Untitled conversation'}
                </a>
                <span>{item.agent}</span>
                <time dateTime={item.created_at}>{timeAgo(item.created_at)}</time>
              </div>
            }
            onAnswered={() => remove(item.request_id)}
          />
        ))}
      </div>
    </section>
  );
}
