import { useState } from 'react';
import type { AgentInfo, InputKind, ParleyClient } from 'parley/client';
import type { InputResolution } from '../conversation/items';
import { explainRequestError, formatDateTime, timeLeft } from '../words';

export interface InputRequest {
  sessionId: string;
  requestId: string;
  inputKind: InputKind;
  tool?: string | null | undefined;
  arguments?: unknown;
  prompt?: string | null | undefined;
  expectedSequence: number;
  argumentsDigest?: string | null | undefined;
  deadlineAt?: string | null | undefined;
  /** Whom its escalation chain added to its audience so far (user:NAME, role:NAME). */
  escalatedTo?: string[] | undefined;
  /** Its deadline's reminder went out. */
  reminded?: boolean | undefined;
  /** external_auth: the third party, and where access to it is granted. */
  provider?: string | null | undefined;
  url?: string | null | undefined;
  resolved?: InputResolution | undefined;
}

const titles: Record<InputKind, string> = {
  approval: 'Approval needed',
  question: 'The agent asks',
  budget_extension: 'More budget needed',
  reconciliation: 'Did it happen?',
  external_auth: 'Access needed',
  client_tool: 'Waiting for the client',
};

/** What happens when a request's deadline passes unanswered. */
const afterDeadline: Record<InputKind, string> = {
  approval: 'then its default applies (usually: rejected)',
  question: 'then the agent goes on without an answer',
  budget_extension: 'then it counts as refused',
  reconciliation: 'then its default applies',
  external_auth: 'then its default applies',
  client_tool: 'then the call fails',
};

/** How a request its deadline resolved ended. */
function timedOutText(kind: InputKind, approved: boolean): string {
  if (kind === 'question') return 'Nobody answered in time';
  if (kind === 'budget_extension') return 'Nobody answered in time: refused';
  return `Nobody answered in time: ${approved ? 'approved' : 'rejected'} by default`;
}

/** A link only to a web page: a tool's URL is shown, never run as script. */
function webUrl(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : null;
  } catch {
    return null;
  }
}

function verdict(request: InputRequest, resolved: InputResolution): string {
  const by = resolved.actor ?? 'someone';
  if (request.inputKind === 'reconciliation') {
    return resolved.approved
      ? `It happened, says ${by}`
      : `It did not happen, says ${by}: run again`;
  }
  if (request.inputKind === 'external_auth') {
    return resolved.approved ? `Access granted by ${by}` : `Access refused by ${by}`;
  }
  const yes = request.inputKind === 'question' ? 'Answered' : 'Approved';
  return `${resolved.approved ? yes : 'Rejected'} by ${by}`;
}

/**
 * An input request (PROTOCOL.md §4) as a decision card: approvals show the tool, its
 * arguments and who may answer; questions take a written answer; budget extensions allow
 * one more budget or stop; a reconciliation asks whether an interrupted call took effect
 * (Yes / No); an external_auth links to where access is granted and takes the
 * credential's reference. Used in the thread and in the inbox alike.
 */
export function InputCard(props: {
  client: ParleyClient;
  request: InputRequest;
  agent: AgentInfo | undefined;
  onAnswered?: (approved: boolean) => void;
  heading?: React.ReactNode;
  /** The server listed it as the viewer's to answer (the inbox): overrides the agent's rule. */
  answerable?: boolean;
}) {
  const { client, request, agent } = props;
  const [reason, setReason] = useState('');
  const [answer, setAnswer] = useState('');
  const [credential, setCredential] = useState('');
  const [rejecting, setRejecting] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const mayAnswer = props.answerable ?? agent?.may_answer ?? true;
  const escalated = request.escalatedTo ?? [];
  const who =
    (agent?.approver_roles && agent.approver_roles.length > 0
      ? `people with the role ${agent.approver_roles.join(' or ')}`
      : 'anyone in this conversation') +
    (escalated.length > 0 ? `; escalated to ${escalated.join(', ')}` : '');

  async function respond(
    approved: boolean,
    response?: Record<string, unknown>,
    credentialRef?: string,
  ) {
    setBusy(true);
    setError(null);
    try {
      await client.answerInput(request.sessionId, request.requestId, {
        expectedSequence: request.expectedSequence,
        approved,
        response,
        argumentsDigest: request.argumentsDigest ?? undefined,
        credentialRef,
      });
      props.onAnswered?.(approved);
    } catch (failure) {
      setError(explainRequestError(failure));
      setBusy(false);
    }
  }

  const label = request.tool
    ? `${titles[request.inputKind]}: ${request.tool}`
    : titles[request.inputKind];
  const resolved = request.resolved;
  return (
    <section className={`card input-card ${resolved ? 'resolved' : 'open'}`} aria-label={label}>
      {props.heading}
      <h3 className="card-title">{label}</h3>
      {request.prompt ? <p className="prompt">{request.prompt}</p> : null}
      {request.inputKind === 'external_auth' ? (
        <p className="auth-link">
          {webUrl(request.url) ? (
            <a href={webUrl(request.url) as string} target="_blank" rel="noopener noreferrer">
              Grant access to {request.provider ?? 'the service'}
            </a>
          ) : (
            <span>Access to {request.provider ?? 'a service'} is needed.</span>
          )}
        </p>
      ) : null}
      {request.inputKind === 'approval' ||
      request.inputKind === 'reconciliation' ||
      request.inputKind === 'client_tool' ? (
        <pre className="arguments" aria-label="Arguments">
          {JSON.stringify(request.arguments ?? {}, null, 2)}
        </pre>
      ) : null}
      {resolved ? (
        <p className={`verdict ${resolved.approved ? 'ok' : 'no'}`} role="status">
          {resolved.expired
            ? `No longer needed (${resolved.expired})`
            : resolved.timedOut
              ? timedOutText(request.inputKind, resolved.approved)
              : verdict(request, resolved)}
        </p>
      ) : (
        <>
          <p className="who">May answer: {who}</p>
          {request.deadlineAt ? (
            <p className="deadline small muted">
              Answer by{' '}
              <time dateTime={request.deadlineAt}>{formatDateTime(request.deadlineAt)}</time> (
              {timeLeft(request.deadlineAt)}); {afterDeadline[request.inputKind]}.
              {request.reminded ? ' A reminder went out.' : null}
            </p>
          ) : null}
          {request.inputKind === 'client_tool' ? (
            <p className="muted">
              The client that declared {request.tool ?? 'this tool'} runs it and returns its output.
            </p>
          ) : !mayAnswer ? (
            <p className="muted">Your roles may not answer this request.</p>
          ) : request.inputKind === 'reconciliation' ? (
            <div className="row">
              <span>Did it happen?</span>
              <button
                type="button"
                className="primary"
                disabled={busy}
                onClick={() => void respond(true)}
              >
                Yes
              </button>
              <button type="button" disabled={busy} onClick={() => void respond(false)}>
                No
              </button>
            </div>
          ) : request.inputKind === 'external_auth' ? (
            <form
              className="row"
              onSubmit={(event) => {
                event.preventDefault();
                if (credential.trim()) void respond(true, undefined, credential.trim());
              }}
            >
              <input
                aria-label="Credential reference"
                value={credential}
                onChange={(event) => setCredential(event.target.value)}
                placeholder="Credential reference (e.g. vault:…), never the secret"
                disabled={busy}
              />
              <button type="submit" className="primary" disabled={busy || !credential.trim()}>
                Use it
              </button>
              <button
                type="button"
                className="danger"
                disabled={busy}
                onClick={() => void respond(false)}
              >
                Refuse
              </button>
            </form>
          ) : request.inputKind === 'question' ? (
            <form
              className="row"
              onSubmit={(event) => {
                event.preventDefault();
                if (answer.trim()) void respond(true, { answer: answer.trim() });
              }}
            >
              <input
                aria-label="Your answer"
                value={answer}
                onChange={(event) => setAnswer(event.target.value)}
                placeholder="Your answer"
                disabled={busy}
              />
              <button type="submit" className="primary" disabled={busy || !answer.trim()}>
                Send answer
              </button>
            </form>
          ) : rejecting ? (
            <form
              className="row"
              onSubmit={(event) => {
                event.preventDefault();
                void respond(false, reason.trim() ? { reason: reason.trim() } : undefined);
              }}
            >
              <input
                aria-label="Reason for rejecting"
                value={reason}
                onChange={(event) => setReason(event.target.value)}
                placeholder="Why not? (optional)"
                disabled={busy}
                autoFocus
              />
              <button type="submit" className="danger" disabled={busy}>
                Confirm rejection
              </button>
              <button type="button" onClick={() => setRejecting(false)} disabled={busy}>
                Back
              </button>
            </form>
          ) : (
            <div className="row">
              <button
                type="button"
                className="primary"
                disabled={busy}
                onClick={() => void respond(true)}
              >
                {request.inputKind === 'budget_extension' ? 'Allow more' : 'Approve'}
              </button>
              {request.inputKind === 'budget_extension' ? (
                <button
                  type="button"
                  className="danger"
                  disabled={busy}
                  onClick={() => void respond(false)}
                >
                  Stop here
                </button>
              ) : (
                <button
                  type="button"
                  className="danger"
                  disabled={busy}
                  onClick={() => setRejecting(true)}
                >
                  Reject
                </button>
              )}
            </div>
          )}
          {error ? (
            <p className="error" role="alert">
              {error}
            </p>
          ) : null}
        </>
      )}
    </section>
  );
}
