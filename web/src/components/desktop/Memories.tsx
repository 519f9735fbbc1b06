import { useCallback, useEffect, useRef, useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { onLinkClick } from '../../router';
import { explainRequestError, formatDateTime, timeAgo } from '../../words';
import { deleteMemory, listMemories, type Memory } from './desktopApi';
import { usePoll } from './poll';
import { DeskPanel } from './DeskPanel';

const pollMs = 10_000;
/** How many memories a page shows; "More" reads the next. */
const pageSize = 100;
/** Typing settles this long before the search is asked for. */
const searchSettleMs = 300;

/**
 * What agents remember about people (GET /api/v1/memories; an admin may show the whole
 * tenant's), searched by the server by words as `recall` does (`?q=`), and deleted one by
 * one (DELETE /api/v1/memories/{id}) after a confirmation.
 */
export function Memories(props: { client: ParleyClient; admin: boolean }) {
  const { client, admin } = props;
  const [items, setItems] = useState<Memory[] | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [scope, setScope] = useState<'mine' | 'everyone'>('mine');
  const [search, setSearch] = useState('');
  const [query, setQuery] = useState('');
  const [pages, setPages] = useState(1);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const deleted = useRef(new Set<string>());

  useEffect(() => {
    const settled = setTimeout(() => {
      setQuery(search.trim());
      setPages(1);
    }, searchSettleMs);
    return () => clearTimeout(settled);
  }, [search]);

  const load = useCallback(
    async (current: () => boolean) => {
      try {
        const all: Memory[] = [];
        let cursor: string | null = null;
        do {
          const page = await listMemories(client, {
            user: scope === 'everyone' ? '*' : undefined,
            q: query || undefined,
            cursor,
            limit: pageSize,
          });
          all.push(...page.items);
          cursor = page.next_cursor;
        } while (cursor && all.length < pages * pageSize);
        if (!current()) return;
        setItems(all.filter((memory) => !deleted.current.has(memory.memory_id)));
        setMore(cursor !== null);
        setError(null);
      } catch (failure) {
        if (current()) setError(explainRequestError(failure));
      }
    },
    [client, scope, query, pages],
  );
  usePoll(load, pollMs);

  async function remove(memory: Memory) {
    setConfirming(null);
    try {
      await deleteMemory(client, memory.memory_id);
      deleted.current.add(memory.memory_id);
      setItems((current) => (current ?? []).filter((item) => item.memory_id !== memory.memory_id));
      setMessage(`Deleted the memory “${memory.text.slice(0, 60)}”.`);
    } catch (failure) {
      setMessage(explainRequestError(failure));
    }
  }

  const shown = items ?? [];

  return (
    <DeskPanel
      id="memories"
      title="Memories"
      error={error}
      loading={items === null ? 'Loading memories…' : false}
    >
      <div className="desk-filters">
        <label>
          Search memories
          <input
            type="search"
            value={search}
            placeholder="Words in the memory"
            onChange={(event) => setSearch(event.target.value)}
          />
        </label>
        {admin ? (
          <label>
            Whose
            <select
              value={scope}
              onChange={(event) => setScope(event.target.value as 'mine' | 'everyone')}
            >
              <option value="mine">Mine</option>
              <option value="everyone">Everyone in the tenant</option>
            </select>
          </label>
        ) : null}
      </div>
      {message ? (
        <p className="small muted" role="status">
          {message}
        </p>
      ) : null}
      {items !== null && shown.length === 0 ? (
        <p className="empty">{query ? 'No memory matches.' : 'No memories.'}</p>
      ) : null}
      <ul className="desk-list" aria-label="Memories found">
        {shown.map((memory) => (
          <li key={memory.memory_id} aria-label={memory.text}>
            <p className="desk-memory">{memory.text}</p>
            <p className="small muted">
              {memory.agent} about {memory.user} ·{' '}
              <time dateTime={memory.created_at} title={formatDateTime(memory.created_at)}>
                {timeAgo(memory.created_at)}
              </time>
              {memory.session_id ? (
                <>
                  {' · '}
                  <a href={`/s/${memory.session_id}`} onClick={onLinkClick}>
                    from a conversation
                  </a>
                </>
              ) : null}
            </p>
            {confirming === memory.memory_id ? (
              <div className="desk-actions" role="group" aria-label="Confirm deletion">
                <span className="small">Delete it for good?</span>
                <button type="button" className="danger" onClick={() => void remove(memory)}>
                  Yes, delete
                </button>
                <button type="button" onClick={() => setConfirming(null)}>
                  Keep
                </button>
              </div>
            ) : (
              <button
                type="button"
                className="danger"
                onClick={() => {
                  setConfirming(memory.memory_id);
                  setMessage(null);
                }}
              >
                Delete
              </button>
            )}
          </li>
        ))}
      </ul>
      {more ? (
        <button type="button" onClick={() => setPages((count) => count + 1)}>
          More memories
        </button>
      ) : null}
    </DeskPanel>
  );
}
