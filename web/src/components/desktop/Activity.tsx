import { useCallback, useRef, useState } from 'react';
import type { InboxItem, ParleyClient, UserStreamFrame } from 'parley/client';
import { noFrames, useLiveFrames, useLiveRefresh } from '../../live';
import { onLinkClick } from '../../router';
import { executionStatusLabels, explainRequestError, formatDateTime } from '../../words';
import { DeskPanel } from './DeskPanel';
import { getExecution, listExecutions, hasEnded, type Execution } from './desktopApi';

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

/**
 * What the lines of an execution are made of: its projection (GET /api/v1/executions), or
 * an `execution_status` event of its session, which does not name the user (null until
 * the execution is read).
 */
export type ExecutionFacts = Pick<
  Execution,
  | 'execution_id'
  | 'session_id'
  | 'mission'
  | 'status'
  | 'iteration'
  | 'loop_decision'
  | 'result'
  | 'created_at'
  | 'updated_at'
> & { user: string | null };

/** What the lines of a request are made of: its inbox item, or its `input_required` event. */
export type RequestFacts = Pick<
  InboxItem,
  | 'request_id'
  | 'session_id'
  | 'session_title'
  | 'kind'
  | 'tool'
  | 'prompt'
  | 'priority'
  | 'escalated_to'
  | 'escalation_step'
  | 'created_at'
>;

/** The lines an execution's projection stands for. */
export function executionLines(execution: ExecutionFacts): ActivityLine[] {
  const id = execution.execution_id;
  const base = { sessionId: execution.session_id };
  const lines: ActivityLine[] = [
    {
      ...base,
      key: `${id}:EXE`,
      code: 'EXE',
      at: execution.created_at,
      text: `${execution.mission} started (${id}${execution.user ? `, for ${execution.user}` : ''})`,
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
export function requestLines(item: RequestFacts): ActivityLine[] {
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
 * The activity stream, newest first. Its lines come from the user stream's frames as they
 * arrive (an execution's `execution_status`, a request's `input_required` and
 * `input_escalated`), so a state that begins and ends between two reads is still shown;
 * the executions (GET /api/v1/executions) and pending requests (GET /api/v1/inputs) are
 * read for the lines before the page opened, again whenever the stream (re)connects, and
 * every 2 s only while it is down. A line seen stays while the page is open. What a frame
 * does not say (who an execution runs for, a conversation's title) is read once and
 * fills in its lines.
 */
export function Activity(props: { client: ParleyClient }) {
  const { client } = props;
  const seen = useRef(new Map<string, ActivityLine>());
  const executions = useRef(new Map<string, ExecutionFacts>());
  const requests = useRef(new Map<string, RequestFacts>());
  const titles = useRef(new Map<string, string | null>());
  const asked = useRef(new Set<string>());
  const [lines, setLines] = useState<ActivityLine[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  /** Adds the lines not seen yet; `fresher`: also the newer words of lines seen. */
  const remember = useCallback((found: ActivityLine[], fresher: boolean) => {
    for (const line of found) {
      const known = seen.current.get(line.key);
      if (!known) seen.current.set(line.key, line);
      else if (fresher && known.text !== line.text)
        seen.current.set(line.key, { ...known, text: line.text });
    }
    setLines(
      [...seen.current.values()]
        .sort((a, b) => b.at.localeCompare(a.at) || b.key.localeCompare(a.key))
        .slice(0, keepLines),
    );
  }, []);

  const load = useCallback(async () => {
    try {
      const [listed, inputs] = await Promise.all([
        listExecutions(client, { limit: 100 }),
        client.listInputs({ limit: 200 }),
      ]);
      for (const execution of listed.items)
        executions.current.set(execution.execution_id, execution);
      for (const item of inputs.items) {
        requests.current.set(item.request_id, item);
        titles.current.set(item.session_id, item.session_title);
      }
      remember(
        [...listed.items.flatMap(executionLines), ...inputs.items.flatMap(requestLines)],
        true,
      );
      setError(null);
    } catch (failure) {
      setError(explainRequestError(failure));
    }
  }, [client, remember]);
  useLiveRefresh(load, noFrames, { fallbackMs: pollMs });

  /** Reads once what a frame leaves out, then says its lines again with it. */
  const learn = useCallback((what: string, read: () => Promise<void>) => {
    if (asked.current.has(what)) return;
    asked.current.add(what);
    read().catch(() => asked.current.delete(what));
  }, []);

  useLiveFrames((frame: UserStreamFrame) => {
    if (frame.type !== 'session_event') return;
    const event = frame.event;
    if (event.type === 'execution_status') {
      const known = executions.current.get(event.execution_id);
      const facts: ExecutionFacts = {
        execution_id: event.execution_id,
        session_id: frame.session_id,
        mission: event.mission,
        status: event.status,
        iteration: event.iteration,
        loop_decision: event.loop_decision,
        result: event.result ?? null,
        created_at: known?.created_at ?? event.at,
        updated_at: event.at,
        user: known?.user ?? null,
      };
      executions.current.set(event.execution_id, facts);
      remember(executionLines(facts), false);
      if (facts.user === null) {
        learn(`execution:${event.execution_id}`, async () => {
          const found = await getExecution(client, event.execution_id);
          const latest = executions.current.get(event.execution_id) ?? facts;
          const filled = { ...latest, user: found.user, created_at: found.created_at };
          executions.current.set(event.execution_id, filled);
          remember(executionLines(filled), true);
        });
      }
    } else if (event.type === 'input_required') {
      const facts: RequestFacts = {
        request_id: event.request_id,
        session_id: frame.session_id,
        session_title: titles.current.get(frame.session_id) ?? null,
        kind: event.kind,
        tool: event.tool ?? null,
        prompt: event.prompt ?? null,
        priority: 'normal',
        escalated_to: [],
        escalation_step: 0,
        created_at: event.at,
      };
      requests.current.set(event.request_id, facts);
      remember(requestLines(facts), false);
      if (!titles.current.has(frame.session_id)) {
        learn(`session:${frame.session_id}`, async () => {
          const session = await client.getSession(frame.session_id);
          titles.current.set(frame.session_id, session.title);
          for (const request of requests.current.values()) {
            if (request.session_id !== frame.session_id) continue;
            const titled = { ...request, session_title: session.title };
            requests.current.set(request.request_id, titled);
            remember(requestLines(titled), true);
          }
        });
      }
    } else if (event.type === 'input_escalated') {
      const request = requests.current.get(event.request_id);
      // A request made before the page opened and no longer pending: the listing has it.
      if (!request) return void load();
      const escalated = {
        ...request,
        escalated_to: request.escalated_to.includes(event.to)
          ? request.escalated_to
          : [...request.escalated_to, event.to],
        escalation_step: event.step,
      };
      requests.current.set(event.request_id, escalated);
      remember(requestLines(escalated), false);
    }
  });

  return (
    <DeskPanel
      id="activity"
      title="Activity"
      error={error}
      loading={lines === null ? 'Loading activity…' : false}
    >
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
    </DeskPanel>
  );
}
