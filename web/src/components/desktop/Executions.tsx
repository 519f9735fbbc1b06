import { useCallback, useRef, useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { onLinkClick } from '../../router';
import {
  executionStatusLabels,
  explainRequestError,
  formatDateTime,
  timeAgo,
  timeLeft,
} from '../../words';
import {
  cancelExecution,
  clientKey,
  endedStatuses,
  hasEnded,
  listExecutions,
  unblockExecution,
  type Execution,
} from './desktopApi';
import { usePoll } from './poll';
import { DeskPanel } from './DeskPanel';

/** How often the list is read: a status change shows within this. */
export const executionsPollMs = 1500;

const statuses = [
  'starting',
  'running',
  'interrupted',
  'waiting',
  'blocked',
  ...endedStatuses,
] as const;

/**
 * The tenant's executions, newest first (GET /api/v1/executions, filtered by mission and
 * status), read again every 1.5 s: status, iteration of max, next run, the last loop
 * decision, the result; cancel and unblock in place.
 */
export function Executions(props: {
  client: ParleyClient;
  missions: string[];
  refresh: number;
  /** The active workspace: only its executions (null: all). */
  workspaceId: string | null;
}) {
  const { client, refresh, workspaceId } = props;
  const [items, setItems] = useState<Execution[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [mission, setMission] = useState('');
  const [status, setStatus] = useState('');

  const load = useCallback(
    async (current: () => boolean) => {
      try {
        const page = await listExecutions(client, { mission, status, workspaceId, limit: 50 });
        if (!current()) return;
        setItems(page.items);
        setError(null);
      } catch (failure) {
        if (current()) setError(explainRequestError(failure));
      }
    },
    // `refresh` changes after a dispatch: the list is read again at once.
    [client, mission, status, workspaceId, refresh],
  );
  usePoll(load, executionsPollMs);

  return (
    <DeskPanel
      id="executions"
      title="Executions"
      wide
      error={error}
      loading={items === null ? 'Loading executions…' : false}
    >
      <div className="desk-filters">
        <label>
          Mission
          <select value={mission} onChange={(event) => setMission(event.target.value)}>
            <option value="">All</option>
            {props.missions.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={status} onChange={(event) => setStatus(event.target.value)}>
            <option value="">All</option>
            {statuses.map((name) => (
              <option key={name} value={name}>
                {executionStatusLabels[name] ?? name}
              </option>
            ))}
          </select>
        </label>
      </div>
      {items !== null && items.length === 0 ? (
        <p className="empty">No executions{mission || status ? ' match' : ' yet'}.</p>
      ) : null}
      <div className="desk-cards">
        {(items ?? []).map((execution) => (
          <ExecutionCard
            key={execution.execution_id}
            client={client}
            execution={execution}
            onChanged={() => void load(() => true)}
          />
        ))}
      </div>
    </DeskPanel>
  );
}

function resultText(result: unknown): { text: string; failed: boolean } | null {
  if (result === null || result === undefined) return null;
  const value = result as {
    content?: unknown;
    error?: { code?: string; message?: string };
    threads?: { status?: string }[];
  };
  if (value.error) {
    return {
      text: `${value.error.code ?? 'error'}: ${value.error.message ?? ''}`.trim(),
      failed: true,
    };
  }
  if (typeof value.content === 'string') return { text: value.content, failed: false };
  if (Array.isArray(value.threads)) {
    const done = value.threads.filter((thread) => thread.status === 'success').length;
    return { text: `${done} of ${value.threads.length} threads succeeded`, failed: false };
  }
  return { text: JSON.stringify(result), failed: false };
}

function ExecutionCard(props: {
  client: ParleyClient;
  execution: Execution;
  onChanged: () => void;
}) {
  const { client, execution } = props;
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState<'cancel' | 'unblock' | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  // One command id per action, kept across retries (the server applies it once).
  const commands = useRef<{ cancel?: string; unblock?: string }>({});
  const ended = hasEnded(execution.status);
  const loop = execution.loop_status !== null;
  const result = resultText(execution.result);
  const working = execution.status === 'running' || execution.status === 'starting';

  async function command(kind: 'cancel' | 'unblock') {
    setBusy(kind);
    setMessage(null);
    try {
      const key = (commands.current[kind] ??= clientKey(kind));
      const answer =
        kind === 'cancel'
          ? await cancelExecution(client, execution.execution_id, key)
          : await unblockExecution(client, execution.execution_id, key, note);
      if (answer.result === 'too_late') setMessage('Too late: the execution had already ended.');
      else if (answer.status === 'cancelling') setMessage('Cancelling its running turn…');
      else setMessage(kind === 'cancel' ? 'Cancelled.' : 'Unblocked: the next iteration runs.');
      if (kind === 'unblock') {
        setNote('');
        delete commands.current.unblock;
      }
      props.onChanged();
    } catch (failure) {
      setMessage(explainRequestError(failure));
    } finally {
      setBusy(null);
    }
  }

  return (
    <article
      className="desk-card"
      aria-label={`Execution ${execution.execution_id}`}
      aria-busy={working}
    >
      <header className="desk-card-head">
        <strong>{execution.mission}</strong>
        <span
          className={`badge exec-${execution.status}`}
          aria-label={`Status: ${executionStatusLabels[execution.status] ?? execution.status}`}
        >
          {executionStatusLabels[execution.status] ?? execution.status}
        </span>
      </header>
      <p className="small muted desk-id">
        {execution.execution_id} · {execution.agent} · for {execution.user} ·{' '}
        <time dateTime={execution.created_at} title={formatDateTime(execution.created_at)}>
          {timeAgo(execution.created_at)}
        </time>
      </p>
      {loop ? (
        <div className="desk-progress">
          <progress
            max={Math.max(1, execution.max_iterations)}
            value={execution.iteration}
            aria-label={`Iteration ${execution.iteration} of ${execution.max_iterations}`}
          />
          <span className="small">
            iteration {execution.iteration} of {execution.max_iterations}
            {execution.loop_status ? ` · loop ${execution.loop_status}` : ''}
          </span>
        </div>
      ) : working ? (
        <div className="desk-progress">
          <progress aria-label="Working" />
          <span className="small">working</span>
        </div>
      ) : null}
      <dl className="desk-facts small">
        {execution.status === 'waiting' && execution.next_run_at ? (
          <>
            <dt>Next run</dt>
            <dd>
              <time dateTime={execution.next_run_at}>{formatDateTime(execution.next_run_at)}</time>{' '}
              ({timeLeft(execution.next_run_at)})
            </dd>
          </>
        ) : null}
        {execution.loop_decision ? (
          <>
            <dt>Decision</dt>
            <dd>
              {execution.loop_decision.decision} after iteration {execution.loop_decision.iteration}
              : {execution.loop_decision.reason}
            </dd>
          </>
        ) : null}
        {result ? (
          <>
            <dt>Result</dt>
            <dd className={result.failed ? 'error' : undefined}>
              {result.text.length > 240 ? (
                <details>
                  <summary>{result.text.slice(0, 240)}…</summary>
                  <p className="desk-result">{result.text}</p>
                </details>
              ) : (
                <span className="desk-result">{result.text}</span>
              )}
            </dd>
          </>
        ) : null}
      </dl>
      <div className="desk-actions">
        <a href={`/s/${execution.session_id}`} onClick={onLinkClick}>
          Conversation
        </a>
        {execution.status === 'blocked' ? (
          <form
            className="desk-inline"
            onSubmit={(event) => {
              event.preventDefault();
              void command('unblock');
            }}
          >
            <input
              aria-label="Note for the next iteration"
              placeholder="Note (optional)"
              value={note}
              maxLength={4000}
              onChange={(event) => setNote(event.target.value)}
            />
            <button type="submit" disabled={busy !== null}>
              {busy === 'unblock' ? 'Unblocking…' : 'Unblock'}
            </button>
          </form>
        ) : null}
        {!ended ? (
          <button
            type="button"
            className="danger"
            disabled={busy !== null}
            onClick={() => void command('cancel')}
          >
            {busy === 'cancel' ? 'Cancelling…' : 'Cancel'}
          </button>
        ) : null}
      </div>
      {message ? (
        <p className="small muted" role="status">
          {message}
        </p>
      ) : null}
    </article>
  );
}
