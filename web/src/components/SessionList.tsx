import { useMemo, useState } from 'react';
import type { SessionProjection } from 'parley/client';
import { onLinkClick } from '../router';
import { seenSequence } from '../unread';
import { stateLabels, timeAgo } from '../words';

/** The person's sessions, newest activity first, searchable by title. */
export function SessionList(props: {
  sessions: SessionProjection[];
  loading: boolean;
  selected: string | null;
  hasMore: boolean;
  onLoadMore: () => void;
}) {
  const [query, setQuery] = useState('');
  const shown = useMemo(() => {
    const needle = query.trim().toLowerCase();
    if (!needle) return props.sessions;
    return props.sessions.filter((session) => (session.title ?? '').toLowerCase().includes(needle));
  }, [props.sessions, query]);
  return (
    <nav className="session-list" aria-label="Conversations">
      <div className="list-tools">
        <input
          type="search"
          aria-label="Search conversations by title"
          placeholder="Search by title"
          value={query}
          onChange={(event) => setQuery(event.target.value)}
        />
        <a className="button primary" href="/new" onClick={onLinkClick}>
          New chat
        </a>
      </div>
      {props.loading && props.sessions.length === 0 ? <p className="muted pad">Loading…</p> : null}
      {!props.loading && shown.length === 0 ? (
        <p className="muted pad">
          {query ? 'No conversation has that in its title.' : 'No conversations yet.'}
        </p>
      ) : null}
      <ul>
        {shown.map((session) => {
          const unread =
            session.session_id !== props.selected &&
            session.latest_sequence > seenSequence(session.session_id);
          const title = session.title ?? 'Untitled conversation';
          return (
            <li key={session.session_id}>
              <a
                href={`/s/${session.session_id}`}
                onClick={onLinkClick}
                className={`session ${session.session_id === props.selected ? 'selected' : ''} ${unread ? 'unread' : ''}`}
                aria-current={session.session_id === props.selected ? 'page' : undefined}
                aria-label={`${title}${unread ? ', unread' : ''}, ${stateLabels[session.state]}`}
              >
                <span className="session-title">
                  {unread ? <span className="unread-dot" aria-hidden="true" /> : null}
                  {title}
                </span>
                <span className="session-meta small muted">
                  <span>{session.agent}</span>
                  <span className={`badge state-${session.state}`}>
                    {stateLabels[session.state]}
                  </span>
                  <time dateTime={session.updated_at}>{timeAgo(session.updated_at)}</time>
                </span>
              </a>
            </li>
          );
        })}
      </ul>
      {props.hasMore ? (
        <button type="button" className="load-more" onClick={props.onLoadMore}>
          Load older conversations
        </button>
      ) : null}
    </nav>
  );
}
