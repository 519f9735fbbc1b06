import { useCallback, useRef, useState } from 'react';
import type { InboxItem, ParleyClient } from 'parley/client';
import { onLinkClick } from '../../router';
import { executionStatusLabels, explainRequestError, formatDateTime } from '../../words';
import { listExecutions, hasEnded, type Execution } from './desktopApi';
import { usePoll } from './poll';

const pollMs = 2000;
const keepLines = 200;

/**
 * The codes of the activity stream: an execution started (EXE), was interrupted or
 * blocked (INT), ended (END) or failed (ERR); a request waits for a person (APR) or was
 * escalated (ESC).
 */
export type ActivityCode = 'EXE' | 'INT' | 'END' | 'ERR' | 'APR' | 'ESC';

export interface ActivityLine {
  key: string;
  code: ActivityCode;
  at: string;
  text: string;
  sessionId: string;
}

const codeNames: Record<ActivityCode, string> = {
  EXE: 'started',
  INT: 'interrupted',
  END: 'ended',
  ERR: 'error',
  APR: 'approval',
  ESC: 'escalation',
};

/** The lines an execution's projection stands for. */
export function executionLines(execution: Execution): ActivityLine[] {
  const id = execution.execution_id;
  const base = { sessionId: execution.session_id };
  const lines: ActivityLine[] = [
    {
      ...base,
      key: `${id}:EXE`,
      code: 'EXE',
      at: execution.created_at,
      text: `${execution.mission} started (${id}, for ${execution.user})`,
    },
  ];
  if (execution.status === 'interrupted' || execution.status === 'blocked') {
    lines.push({
      ...base,
      // One line per interruption: per iteration and kind, whatever the row's later writes.
      key: `${id}:INT:${execution.status}:${execution.iteration}`,
      code: 'INT',
      at: execution.updated_at,
      text:
        execution.status === 'blocked'
          ? `${execution.mission} is blocked: ${execution.loop_decision?.reason ?? 'a person must act'} (${id})`
          : `${execution.mission} waits for an approval or an answer (${id})`,
    });
  }
  if (hasEnded(execution.status)) {
    const failure = (execution.result as { error?: { code?: string; message?: string } } | null)
      ?.error;
    const failed = execution.status === 'error' || execution.status === 'timeout';
    lines.push({
      ...base,
      key: `${id}:END`,
      code: failed ? 'ERR' : 'END',
      at: execution.updated_at,
      text: failed
        ? `${execution.mission} ${executionStatusLabels[execution.status]}${failure ? `: ${failure.code ?? ''} ${failure.message ?? ''}`.trimEnd() : ''} (${id})`
        : `${execution.mission} ${executionStatusLabels[execution.status] ?? execution.status} after ${execution.iteration} iteration${execution.iteration === 1 ? '' : 's'} (${id})`,
    });
  }
  return lines;
}

/** The lines a pending input request stands for. */
export function requestLines(item: InboxItem): ActivityLine[] {
  const where = item.session_title ?? 'an untitled conversation';
  const what =
    item.kind === 'approval'
      ? `Approval needed: ${item.tool ?? 'a tool'} in ${where}`
      : item.kind === 'question'
        ? `Question in ${where}: ${item.prompt ?? ''}`
        : item.kind === 'budget_extension'
          ? `A budget asks for more in ${where}`
          : `${item.kind.replace('_', ' ')} needed in ${where}`;
  const lines: ActivityLine[] = [
    {
      key: `${item.request_id}:APR`,
      code: 'APR',
      at: item.created_at,
      text: `${what}${item.priority !== 'normal' ? ` (${item.priority})` : ''}`,
      sessionId: item.session_id,
    },
  ];
  if (item.escalated_to.length > 0) {
    lines.push({
      key: `${item.request_id}:ESC:${item.escalation_step}`,
      code: 'ESC',
      at: item.created_at,
      text: `Escalated to ${item.escalated_to.join(', ')}: ${what}`,
      sessionId: item.session_id,
    });
  }
  return lines;
}

/**
 * The activity stream, newest first: lines derived from the executions (GET
 * /api/v1/executions) and the pending requests (GET /api/v1/inputs) read every 2 s. A line
 * seen stays while the page is open, so an interruption that has since resumed is still
 * listed; there is no tenant-wide event stream to read past ones from.
 */
export function Activity(props: { client: ParleyClient }) {
  const { client } = props;
  const seen = useRef(new Map<string, ActivityLine>());
  const [lines, setLines] = useState<ActivityLine[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(
    async (current: () => boolean) => {
      try {
        const [executions, inputs] = await Promise.all([
          listExecutions(client, { limit: 100 }),
          client.listInputs({ limit: 200 }),
        ]);
        if (!current()) return;
        const fresh = [
          ...executions.items.flatMap(executionLines),
          ...inputs.items.flatMap(requestLines),
        ];
        for (const line of fresh) if (!seen.current.has(line.key)) seen.current.set(line.key, line);
        const sorted = [...seen.current.values()]
          .sort((a, b) => b.at.localeCompare(a.at) || b.key.localeCompare(a.key))
          .slice(0, keepLines);
        setLines(sorted);
        setError(null);
      } catch (failure) {
        if (current()) setError(explainRequestError(failure));
      }
    },
    [client],
  );
  usePoll(load, pollMs);

  return (
    <section className="desk-panel" aria-labelledby="desk-activity" id="activity">
      <h3 id="desk-activity">Activity</h3>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      {lines === null && !error ? <p aria-busy="true">Loading activity…</p> : null}
      {lines !== null && lines.length === 0 ? (
        <p className="empty">Nothing has happened yet.</p>
      ) : null}
      <ol className="desk-activity" role="log" aria-label="Activity stream">
        {(lines ?? []).map((line) => (
          <li key={line.key} className={`activity-${line.code}`}>
            <abbr className="activity-code" title={codeNames[line.code]}>
              {line.code}
            </abbr>
            <time className="small muted" dateTime={line.at}>
              {formatDateTime(line.at)}
            </time>
            <a href={`/s/${line.sessionId}`} onClick={onLinkClick}>
              {line.text}
            </a>
          </li>
        ))}
      </ol>
    </section>
  );
}
