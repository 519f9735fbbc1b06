import { useState } from 'react';
import type { AgentInfo, ParleyClient, SessionProjection } from 'parley/client';
import { navigate, onLinkClick } from '../router';
import { explainRequestError } from '../words';

/**
 * Start a conversation: pick an agent, give it a title (or let the first message be it).
 * On the first page (`landing`) it is a message box: the first message starts it, and the
 * conversation opened last (`continuing`, the `active_session_id` preference) is offered.
 * The picker starts at the user's agent (the `active_agent` preference); choosing one
 * saves it.
 */
export function NewSession(props: {
  client: ParleyClient;
  agents: AgentInfo[];
  preferredAgent: string | null;
  onAgentChosen: (agent: string) => void;
  onCreated: () => void;
  landing?: boolean;
  continuing?: SessionProjection | null;
}) {
  const landing = props.landing === true;
  const preferred = props.agents.find((agent) => agent.name === props.preferredAgent)?.name;
  const fallback =
    preferred ?? props.agents.find((agent) => agent.default)?.name ?? props.agents[0]?.name ?? '';
  // Until the person picks one, the preferred agent (the agents and preferences load late).
  const [picked, setPicked] = useState<string | null>(null);
  const agent = picked ?? fallback;
  const [title, setTitle] = useState('');
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const chosen = props.agents.find((candidate) => candidate.name === agent);

  async function create() {
    if (landing && !message.trim()) return;
    setBusy(true);
    setError(null);
    try {
      const firstLine = message.trim().split('\n')[0]?.slice(0, 80) ?? '';
      const session = await props.client.createSession({
        agent: agent || undefined,
        title: title.trim() || firstLine || undefined,
      } as { agent?: string; title?: string });
      if (message.trim()) {
        await props.client.admitTurn({ sessionId: session.session_id, message: message.trim() });
      }
      props.onCreated();
      navigate(`/s/${session.session_id}`);
    } catch (failure) {
      setError(explainRequestError(failure));
      setBusy(false);
    }
  }

  return (
    <section className="new-session" aria-label="New conversation">
      <h2>{landing ? 'Start a conversation' : 'New conversation'}</h2>
      {landing ? (
        <p className="muted small">Write your first message, or pick a conversation on the left.</p>
      ) : null}
      {landing && props.continuing ? (
        <p className="continue-session">
          <a className="button" href={`/s/${props.continuing.session_id}`} onClick={onLinkClick}>
            Continue {props.continuing.title ?? 'Untitled conversation'}
          </a>
        </p>
      ) : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void create();
        }}
      >
        <label>
          Agent
          <select
            value={agent}
            onChange={(event) => {
              setPicked(event.target.value);
              props.onAgentChosen(event.target.value);
            }}
            aria-label="Agent"
          >
            {props.agents.map((candidate) => (
              <option key={candidate.name} value={candidate.name}>
                {candidate.name}
                {candidate.default ? ' (default)' : ''}
              </option>
            ))}
          </select>
        </label>
        {chosen?.greeting ? (
          <p className="muted small">It greets with: “{chosen.greeting}”</p>
        ) : null}
        {chosen && chosen.tools.length > 0 ? (
          <p className="muted small">
            Tools:{' '}
            {chosen.tools
              .map(
                (tool) =>
                  `${tool.name} (${tool.policy === 'approve' ? 'asks first' : tool.policy === 'deny' ? 'off' : 'on'})`,
              )
              .join(', ')}
          </p>
        ) : null}
        {landing ? null : (
          <label>
            Title
            <input
              value={title}
              onChange={(event) => setTitle(event.target.value)}
              placeholder="Optional: the first line of your message otherwise"
              aria-label="Title"
            />
          </label>
        )}
        <label>
          First message
          <textarea
            value={message}
            rows={4}
            onChange={(event) => setMessage(event.target.value)}
            aria-label="First message"
            placeholder={landing ? 'Ask anything…' : 'Optional'}
            onKeyDown={(event) => {
              if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
                event.preventDefault();
                void create();
              }
            }}
          />
        </label>
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={busy || (landing && !message.trim())}>
          {landing ? 'Send' : 'Start conversation'}
        </button>
      </form>
    </section>
  );
}
