import { useCallback, useEffect, useMemo, useState } from 'react';
import {
  isParleyClientError,
  type AgentInfo,
  type DefinitionRevision,
  type DefinitionRevisionView,
  type ParleyClient,
} from 'parley/client';
import { explainRequestError, formatDateTime, timeAgo } from '../../words';
import { AgentIcon } from './AgentIcon';
import { diffLines, stableJson, type DiffLine } from './diff';
import {
  getAgentDefinition,
  putAgentDefinition,
  restoreAgentDefinition,
  type DefinitionView,
} from './desktopApi';

/** Revisions listed at a time ("Show older revisions" reads the next page). */
const revisionPage = 20;

/** The shipped definition, or null when the tenant created this agent (nothing shipped). */
async function shippedOrNone(
  client: ParleyClient,
  name: string,
): Promise<DefinitionRevisionView | null> {
  try {
    return await client.getShippedAgent(name);
  } catch (problem) {
    if (isParleyClientError(problem) && problem.code === 'not_shipped') return null;
    throw problem;
  }
}

/** What the editor diffs: its title and the two texts, old first. */
interface Comparison {
  title: string;
  lines: DiffLine[];
}

export function AgentEditor(props: {
  client: ParleyClient;
  agent: AgentInfo;
  onChanged: () => void;
}) {
  const { client, agent, onChanged } = props;
  const [view, setView] = useState<DefinitionView | null>(null);
  const [draft, setDraft] = useState('');
  const [revisions, setRevisions] = useState<DefinitionRevision[]>([]);
  const [olderCursor, setOlderCursor] = useState<string | null>(null);
  const [shipped, setShipped] = useState<DefinitionRevisionView | null>(null);
  const [shown, setShown] = useState<DefinitionRevisionView | null>(null);
  const [compare, setCompare] = useState<Comparison | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState<'loading' | 'saving' | 'restoring' | 'reading' | null>(
    'loading',
  );
  const [message, setMessage] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  const saved = view ? stableJson(view.definition) : '';

  /** The definition, its newest revisions and the shipped one, read together. */
  const read = useCallback(async () => {
    const [found, page, shippedView] = await Promise.all([
      getAgentDefinition(client, agent.name),
      client.listAgentRevisions(agent.name, { limit: revisionPage }),
      shippedOrNone(client, agent.name),
    ]);
    return { found, page, shippedView };
  }, [client, agent.name]);

  const show = useCallback((loaded: Awaited<ReturnType<typeof read>>) => {
    setView(loaded.found);
    setDraft(stableJson(loaded.found.definition));
    setRevisions(loaded.page.items);
    setOlderCursor(loaded.page.next_cursor);
    setShipped(loaded.shippedView);
    setCompare(null);
    setShown(null);
    setConfirming(false);
  }, []);

  useEffect(() => {
    let live = true;
    read().then(
      (loaded) => {
        if (!live) return;
        show(loaded);
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
  }, [read, show]);

  // The draft as an object, for the icon controls (null while it is not valid JSON).
  const drafted = useMemo(() => {
    try {
      const parsed: unknown = JSON.parse(draft);
      return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : null;
    } catch {
      return null;
    }
  }, [draft]);

  function setIcon(icon: string | null) {
    if (!drafted) return;
    const { icon: _old, ...rest } = drafted;
    setDraft(stableJson(icon === null ? rest : { ...rest, icon }));
    setMessage(null);
  }

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
    try {
      await putAgentDefinition(client, agent.name, definition as Record<string, unknown>);
      const loaded = await read();
      show(loaded);
      const current = loaded.page.items.find((entry) => entry.current);
      setMessage(`Saved${current ? ` as revision ${current.revision}` : ''}.`);
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
      const answer = await restoreAgentDefinition(client, agent.name);
      if ('deleted' in answer) {
        setMessage('This agent was created here: it is deleted.');
        setView(null);
        setRevisions([]);
        setConfirming(false);
      } else {
        show(await read());
        setMessage('The shipped definition is restored.');
      }
      onChanged();
    } catch (problem) {
      setFailure(explainRequestError(problem));
    } finally {
      setBusy(null);
    }
  }

  async function readRevision(revision: number): Promise<DefinitionRevisionView | null> {
    setBusy('reading');
    setFailure(null);
    try {
      return await client.getAgentRevision(agent.name, revision);
    } catch (problem) {
      setFailure(explainRequestError(problem));
      return null;
    } finally {
      setBusy(null);
    }
  }

  async function showRevision(entry: DefinitionRevision) {
    if (shown?.revision === entry.revision) return setShown(null);
    const found = await readRevision(entry.revision);
    if (found) setShown(found);
  }

  async function compareRevision(entry: DefinitionRevision) {
    const title = `Revision ${entry.revision} → current`;
    if (compare?.title === title) return setCompare(null);
    const found = await readRevision(entry.revision);
    if (found) setCompare({ title, lines: diffLines(stableJson(found.definition), saved) });
  }

  async function showOlder() {
    if (olderCursor === null) return;
    setBusy('reading');
    try {
      const page = await client.listAgentRevisions(agent.name, {
        limit: revisionPage,
        cursor: olderCursor,
      });
      setRevisions((current) => [...current, ...page.items]);
      setOlderCursor(page.next_cursor);
    } catch (problem) {
      setFailure(explainRequestError(problem));
    } finally {
      setBusy(null);
    }
  }

  const shippedText = shipped ? stableJson(shipped.definition) : null;
  const current = revisions.find((entry) => entry.current);
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
            {current ? ` · revision ${current.revision}` : ''} · changed{' '}
            <time dateTime={view.updated_at} title={formatDateTime(view.updated_at)}>
              {timeAgo(view.updated_at)}
            </time>
            {view.updated_by ? ` by ${view.updated_by}` : ''}
          </p>
          {view.is_customized ? (
            <p className="small muted">
              {shipped
                ? `Customized from the shipped version ${view.shipped_content_hash?.slice(0, 12) ?? ''}`
                : 'Created by this tenant (nothing shipped to restore)'}
              {view.shipped_changed ? '; the configuration ships a newer version since' : ''}.
            </p>
          ) : null}
          {view.refused ? (
            <p className="error small" role="alert">
              Not in use: {view.refused}
            </p>
          ) : null}
          <AgentIcon
            client={client}
            agent={agent.name}
            icon={typeof drafted?.icon === 'string' ? drafted.icon : null}
            disabled={busy !== null || drafted === null}
            onChange={setIcon}
          />
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
            {view.is_customized && shippedText !== null ? (
              <button
                type="button"
                aria-pressed={compare?.title === 'Shipped → current'}
                onClick={() =>
                  setCompare((open) =>
                    open?.title === 'Shipped → current'
                      ? null
                      : { title: 'Shipped → current', lines: diffLines(shippedText, saved) },
                  )
                }
              >
                Compare with shipped
              </button>
            ) : null}
            {view.is_customized ? (
              <button
                type="button"
                className="danger"
                disabled={busy !== null || confirming}
                onClick={() => (shippedText !== null ? setConfirming(true) : void restore())}
              >
                {busy === 'restoring'
                  ? 'Restoring…'
                  : shippedText !== null
                    ? 'Restore shipped…'
                    : 'Delete'}
              </button>
            ) : null}
          </div>
          {confirming && shippedText !== null ? (
            <div role="group" aria-label="Restore the shipped definition">
              <Diff
                title="Restoring: from your definition to the shipped one"
                lines={diffLines(saved, shippedText)}
              />
              <div className="desk-actions">
                <button
                  type="button"
                  className="danger"
                  disabled={busy !== null}
                  onClick={() => void restore()}
                >
                  {busy === 'restoring' ? 'Restoring…' : 'Confirm restore'}
                </button>
                <button type="button" disabled={busy !== null} onClick={() => setConfirming(false)}>
                  Keep mine
                </button>
              </div>
            </div>
          ) : null}
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
      {compare ? <Diff title={compare.title} lines={compare.lines} /> : null}
      <div role="region" aria-label="Revisions">
        <h5>Revisions</h5>
        <ol className="desk-revisions small">
          {revisions.map((entry) => (
            <li key={entry.revision} aria-label={`Revision ${entry.revision}`}>
              <span>
                Revision {entry.revision}
                {entry.current ? ' (current)' : ''} · {sourceWords[entry.source]} ·{' '}
                {entry.content_hash.slice(0, 12)} · {entry.created_by ?? 'configuration'} ·{' '}
                <time dateTime={entry.created_at}>{formatDateTime(entry.created_at)}</time>
              </span>
              <button
                type="button"
                aria-pressed={shown?.revision === entry.revision}
                disabled={busy !== null}
                onClick={() => void showRevision(entry)}
              >
                Show
              </button>
              {!entry.current && view ? (
                <button
                  type="button"
                  aria-pressed={compare?.title === `Revision ${entry.revision} → current`}
                  disabled={busy !== null}
                  onClick={() => void compareRevision(entry)}
                >
                  Compare with current
                </button>
              ) : null}
            </li>
          ))}
        </ol>
        {olderCursor !== null ? (
          <button type="button" disabled={busy !== null} onClick={() => void showOlder()}>
            Show older revisions
          </button>
        ) : null}
        {shown ? (
          <figure className="desk-diff" aria-label={`Revision ${shown.revision}`}>
            <figcaption className="small muted">
              Revision {shown.revision} · {sourceWords[shown.source]}
            </figcaption>
            <pre>{stableJson(shown.definition)}</pre>
          </figure>
        ) : null}
      </div>
    </div>
  );
}

const sourceWords: Record<DefinitionRevision['source'], string> = {
  shipped: 'shipped',
  edited: 'edited',
  restored: 'restored to shipped',
};

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
