import { useCallback, useEffect, useMemo, useState } from 'react';
import type { AgentInfo, ParleyClient } from 'parley/client';
import { explainRequestError, formatDateTime, timeAgo } from '../../words';
import { diffLines, stableJson, type DiffLine } from './diff';
import {
  getAgentDefinition,
  listAgents,
  putAgentDefinition,
  restoreAgentDefinition,
  type DefinitionView,
} from './desktopApi';
import { usePoll } from './poll';

const pollMs = 10_000;

/** A revision of an agent's definition this page has read. */
interface SeenRevision {
  revision: number | null;
  content_hash: string | null;
  updated_at: string;
  updated_by: string | null;
  text: string;
}

/**
 * The tenant's agents (GET /api/v1/agents: model, revision, customized or shipped) and,
 * for an admin, one agent's definition (GET /api/v1/agents/{name}) to edit (PUT) or
 * restore to the shipped one (DELETE). The server keeps every revision but lists none
 * (no API yet), so the revisions shown are the ones this page read, each comparable with
 * the current one.
 */
export function Agents(props: { client: ParleyClient; admin: boolean }) {
  const { client, admin } = props;
  const [items, setItems] = useState<AgentInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);

  const load = useCallback(
    async (current: () => boolean) => {
      try {
        const answer = await listAgents(client);
        if (!current()) return;
        setItems(answer.items);
        setError(null);
      } catch (failure) {
        if (current()) setError(explainRequestError(failure));
      }
    },
    [client],
  );
  usePoll(load, pollMs);

  const agent = items?.find((candidate) => candidate.name === selected) ?? null;
  return (
    <section className="desk-panel wide" aria-labelledby="desk-agents" id="agents">
      <h3 id="desk-agents">Agents</h3>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      {items === null && !error ? <p aria-busy="true">Loading agents…</p> : null}
      <ul className="desk-list">
        {(items ?? []).map((item) => (
          <li key={item.name} aria-label={`Agent ${item.name}`}>
            <div className="desk-card-head">
              <strong>{item.name}</strong>
              <span className="badge">{item.is_customized ? 'customized' : 'shipped'}</span>
              {item.shipped_changed ? (
                <span className="badge exec-blocked">newer shipped version</span>
              ) : null}
            </div>
            <p className="small muted">
              {item.model}
              {item.revision !== null ? ` · revision ${item.revision}` : ''}
              {item.namespace ? ` · ${item.namespace}` : ''}
            </p>
            {admin ? (
              <button
                type="button"
                aria-expanded={selected === item.name}
                aria-controls="desk-agent-editor"
                onClick={() => setSelected((current) => (current === item.name ? null : item.name))}
              >
                {selected === item.name ? 'Close' : 'Definition'}
              </button>
            ) : null}
          </li>
        ))}
      </ul>
      {!admin ? (
        <p className="small muted">Reading and editing definitions needs the admin role.</p>
      ) : null}
      {admin && agent ? (
        <AgentEditor
          key={agent.name}
          client={client}
          agent={agent}
          onChanged={() => void load(() => true)}
        />
      ) : null}
    </section>
  );
}

function AgentEditor(props: { client: ParleyClient; agent: AgentInfo; onChanged: () => void }) {
  const { client, agent, onChanged } = props;
  const [view, setView] = useState<DefinitionView | null>(null);
  const [draft, setDraft] = useState('');
  const [seen, setSeen] = useState<SeenRevision[]>([]);
  const [compare, setCompare] = useState<SeenRevision | null>(null);
  const [restored, setRestored] = useState<DiffLine[] | null>(null);
  const [busy, setBusy] = useState<'loading' | 'saving' | 'restoring' | null>('loading');
  const [message, setMessage] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  const saved = view ? stableJson(view.definition) : '';

  const remember = useCallback((found: DefinitionView, revision: number | null) => {
    const text = stableJson(found.definition);
    setView(found);
    setDraft(text);
    setSeen((current) =>
      current.some(
        (entry) => entry.content_hash === found.content_hash && entry.revision === revision,
      )
        ? current
        : [
            {
              revision,
              content_hash: found.content_hash,
              updated_at: found.updated_at,
              updated_by: found.updated_by,
              text,
            },
            ...current,
          ],
    );
  }, []);

  /** The definition with the revision the listing gives it (read together). */
  const read = useCallback(async () => {
    const [found, listing] = await Promise.all([
      getAgentDefinition(client, agent.name),
      listAgents(client),
    ]);
    const revision = listing.items.find((item) => item.name === agent.name)?.revision ?? null;
    return { found, revision };
  }, [client, agent.name]);

  useEffect(() => {
    let live = true;
    read().then(
      ({ found, revision }) => {
        if (!live) return;
        remember(found, revision);
        setBusy(null);
      },
      (problem: unknown) => {
        if (!live) return;
        setFailure(explainRequestError(problem));
        setBusy(null);
      },
    );
    return () => {
      live = false;
    };
  }, [read, remember]);

  const changes = useMemo(
    () => (view && draft !== saved ? diffLines(saved, draft) : null),
    [view, draft, saved],
  );

  async function save() {
    let definition: unknown;
    try {
      definition = JSON.parse(draft);
    } catch {
      setFailure('The definition is not valid JSON.');
      return;
    }
    if (!definition || typeof definition !== 'object' || Array.isArray(definition)) {
      setFailure('The definition must be a JSON object.');
      return;
    }
    setBusy('saving');
    setFailure(null);
    setMessage(null);
    setRestored(null);
    try {
      await putAgentDefinition(client, agent.name, definition as Record<string, unknown>);
      const { found, revision } = await read();
      remember(found, revision);
      setMessage(`Saved${revision !== null ? ` as revision ${revision}` : ''}.`);
      onChanged();
    } catch (problem) {
      setFailure(explainRequestError(problem));
    } finally {
      setBusy(null);
    }
  }

  async function restore() {
    setBusy('restoring');
    setFailure(null);
    setMessage(null);
    try {
      const before = saved;
      const answer = await restoreAgentDefinition(client, agent.name);
      if ('deleted' in answer) {
        setMessage('This agent was created here: it is deleted.');
        setView(null);
      } else {
        const { found, revision } = await read();
        remember(found, revision);
        setRestored(diffLines(before, stableJson(found.definition)));
        setMessage('The shipped definition is restored.');
      }
      onChanged();
    } catch (problem) {
      setFailure(explainRequestError(problem));
    } finally {
      setBusy(null);
    }
  }

  const current = seen[0];
  return (
    <div
      className="desk-editor"
      id="desk-agent-editor"
      role="region"
      aria-label={`Definition of ${agent.name}`}
      aria-busy={busy !== null}
    >
      <h4>Definition of {agent.name}</h4>
      {busy === 'loading' ? <p aria-busy="true">Loading the definition…</p> : null}
      {view ? (
        <>
          <p className="small muted">
            {view.is_customized ? 'This tenant’s own definition' : 'The shipped definition'}
            {agent.revision !== null ? ` · revision ${current?.revision ?? agent.revision}` : ''} ·
            changed{' '}
            <time dateTime={view.updated_at} title={formatDateTime(view.updated_at)}>
              {timeAgo(view.updated_at)}
            </time>
            {view.updated_by ? ` by ${view.updated_by}` : ''}
          </p>
          {view.is_customized ? (
            <p className="small muted">
              {view.shipped_content_hash
                ? `Customized from the shipped version ${view.shipped_content_hash.slice(0, 12)}`
                : 'Created by this tenant (nothing shipped to restore)'}
              {view.shipped_changed ? '; the configuration ships a newer version since' : ''}. The
              shipped text itself is not available through the API: restoring shows the difference.
            </p>
          ) : null}
          {view.refused ? (
            <p className="error small" role="alert">
              Not in use: {view.refused}
            </p>
          ) : null}
          <label>
            Definition (JSON)
            <textarea
              className="desk-code"
              rows={Math.min(24, Math.max(6, draft.split('\n').length))}
              spellCheck={false}
              value={draft}
              onChange={(event) => {
                setDraft(event.target.value);
                setMessage(null);
              }}
            />
          </label>
          {changes ? <Diff title="Your changes" lines={changes} /> : null}
          <div className="desk-actions">
            <button
              type="button"
              className="primary"
              disabled={busy !== null || !changes}
              onClick={() => void save()}
            >
              {busy === 'saving' ? 'Saving…' : 'Save'}
            </button>
            <button
              type="button"
              disabled={busy !== null || !changes}
              onClick={() => setDraft(saved)}
            >
              Discard changes
            </button>
            {view.is_customized ? (
              <button
                type="button"
                className="danger"
                disabled={busy !== null}
                onClick={() => void restore()}
              >
                {busy === 'restoring'
                  ? 'Restoring…'
                  : view.shipped_content_hash
                    ? 'Restore shipped'
                    : 'Delete'}
              </button>
            ) : null}
          </div>
        </>
      ) : null}
      {failure ? (
        <p className="error small" role="alert">
          {failure}
        </p>
      ) : null}
      {message ? (
        <p className="small muted" role="status">
          {message}
        </p>
      ) : null}
      {restored ? (
        <Diff title="Restored: from your definition to the shipped one" lines={restored} />
      ) : null}
      <div role="region" aria-label="Revisions">
        <h5>Revisions read on this page</h5>
        <ol className="desk-revisions small">
          {seen.map((entry, index) => (
            <li key={`${entry.revision}-${entry.content_hash}`}>
              <span>
                {entry.revision !== null ? `Revision ${entry.revision}` : 'Revision'}
                {index === 0 ? ' (current)' : ''} · {entry.content_hash?.slice(0, 12) ?? 'no hash'}{' '}
                · {entry.updated_by ?? 'configuration'} ·{' '}
                <time dateTime={entry.updated_at}>{formatDateTime(entry.updated_at)}</time>
              </span>
              {index > 0 ? (
                <button
                  type="button"
                  aria-pressed={compare === entry}
                  onClick={() => setCompare((shown) => (shown === entry ? null : entry))}
                >
                  Compare with current
                </button>
              ) : null}
            </li>
          ))}
        </ol>
        {compare && current ? (
          <Diff
            title={`Revision ${compare.revision ?? ''} → current`}
            lines={diffLines(compare.text, current.text)}
          />
        ) : null}
      </div>
    </div>
  );
}

function Diff(props: { title: string; lines: DiffLine[] }) {
  const changed = props.lines.filter((line) => line.kind !== 'same').length;
  // Only the changed lines and two lines around each: a definition is long.
  const near = new Set<number>();
  props.lines.forEach((line, index) => {
    if (line.kind === 'same') return;
    for (let around = index - 2; around <= index + 2; around++) near.add(around);
  });
  return (
    <figure className="desk-diff" aria-label={props.title}>
      <figcaption className="small muted">
        {props.title} · {changed} line{changed === 1 ? '' : 's'} changed
      </figcaption>
      <pre>
        {props.lines.map((line, index) =>
          near.has(index) ? (
            <span key={index} className={`diff-${line.kind}`}>
              {line.kind === 'added' ? '+ ' : line.kind === 'removed' ? '- ' : '  '}
              {line.text}
              {'\n'}
            </span>
          ) : null,
        )}
      </pre>
    </figure>
  );
}
