import { useEffect, useRef, useState } from 'react';
import { newClientKey, type AgentInfo, type ParleyClient, type ParleyEvent } from 'parley/client';
import { useAuthors } from '../conversation/authors';
import { useConversation, type Connection } from '../conversation/useConversation';
import { rememberAttachmentUrl, rememberSent } from '../media';
import { onLinkClick } from '../router';
import { SpeechQueue, useReadAloud } from '../speech';
import { explainError, explainRequestError, formatCost, stateLabels } from '../words';
import { Checkpoints } from './Checkpoints';
import { Composer } from './Composer';
import { SessionPanels } from './panels/SessionPanels';
import { Thread } from './Thread';

const connectionLabels: Record<Connection, string> = {
  connecting: 'Connecting',
  live: 'Live',
  reconnecting: 'Reconnecting',
  resyncing: 'Resyncing',
  offline: 'Offline',
};

export function Conversation(props: {
  client: ParleyClient;
  sessionId: string;
  me: string;
  agents: AgentInfo[];
  /** The voice notices are read aloud in (the `system_voice` preference). */
  systemVoice?: string | null | undefined;
}) {
  const { client, sessionId } = props;
  // Read aloud: live replies sentence by sentence, and failure notices in the system voice.
  const [readAloud, setReadAloud] = useReadAloud();
  const [speechError, setSpeechError] = useState<string | null>(null);
  const player = useRef<HTMLAudioElement>(null);
  const speaker = useRef<SpeechQueue | null>(null);
  // Where the journal stood when this page opened the conversation: ephemeral panels
  // shown before it are not shown again, nor is anything before it read aloud.
  const opened = useRef<{ sessionId: string; sequence: number } | null>(null);
  const voiceOf = useRef<string | null>(null);
  speaker.current ??= new SpeechQueue(client, () => player.current, setSpeechError);
  const listen = (event: ParleyEvent) => {
    // What happened before this page opened is history, not read aloud.
    const since = opened.current?.sessionId === sessionId ? opened.current.sequence : null;
    if (!readAloud || since === null || event.sequence <= since) return;
    const queue = speaker.current!;
    // A reply is read in its agent's voice (the listing's `voice`), as Play reads it.
    const voice = voiceOf.current;
    if (event.type === 'text_delta') queue.add(event.turn_id, event.delta, voice);
    else if (event.type === 'attempt_reset') queue.drop(event.turn_id);
    else if (event.type === 'done') queue.finish(event.turn_id, voice);
    else if (event.type === 'error') {
      queue.say(explainError(event.code, event.message), props.systemVoice);
    }
  };
  const conversation = useConversation(client, sessionId, listen);
  const { state, projection, connection } = conversation;
  useEffect(() => () => speaker.current?.stop(), []);
  const [notice, setNotice] = useState<string | null>(null);
  const [showUsage, setShowUsage] = useState(false);
  const [showCheckpoints, setShowCheckpoints] = useState(false);
  const cancelIds = useRef(new Map<string, string>());
  const bottom = useRef<HTMLDivElement>(null);
  const agentName = projection?.agent ?? '';
  const agent = props.agents.find((candidate) => candidate.name === agentName);
  voiceOf.current = agent?.voice ?? null;
  // Other people in a room are shown by their profiles (display name, avatar).
  const people = useAuthors(
    client,
    sessionId,
    state.items.flatMap((item) =>
      item.kind === 'message' && item.role === 'user' && item.author !== props.me
        ? [item.author]
        : [],
    ),
  );
  if (projection?.session_id === sessionId && opened.current?.sessionId !== sessionId) {
    opened.current = { sessionId, sequence: projection.latest_sequence };
  }

  // Follow the newest content.
  useEffect(() => {
    bottom.current?.scrollIntoView({ block: 'end' });
  }, [state.items, conversation.pending, conversation.writing]);

  // The turn a cancel stops: the one being answered, else the one the server says is
  // current (a posted message that runs no turn, in a room, never counts).
  const busy =
    projection !== null && ['queued', 'running', 'input_required'].includes(projection.state);
  const runningTurn =
    state.activeTurn ?? (busy ? (projection?.current_turn?.turn_id ?? null) : null);

  async function send(message: string, images: { attachmentId: string; url: string }[]) {
    setNotice(null);
    const turnId = newClientKey('turn');
    const attachments = images.map((image) => image.attachmentId);
    for (const image of images) rememberAttachmentUrl(image.attachmentId, image.url);
    rememberSent(sessionId, turnId, attachments);
    try {
      await conversation.send(message, turnId, attachments);
    } catch (error) {
      setNotice(explainRequestError(error));
    }
  }

  async function cancel() {
    if (!runningTurn) return;
    // One command id per turn, so a retried click is the same cancel (PROTOCOL.md §5).
    let commandId = cancelIds.current.get(runningTurn);
    if (!commandId) {
      commandId = newClientKey('cancel');
      cancelIds.current.set(runningTurn, commandId);
    }
    try {
      const result = await client.cancelTurn(sessionId, runningTurn, { commandId });
      if (result.result === 'too_late')
        setNotice('Too late to stop: the reply had already finished.');
    } catch (error) {
      setNotice(explainRequestError(error));
    }
  }

  useEffect(() => {
    const onEscape = (event: KeyboardEvent) => {
      // Esc in a card's field (a rejection reason, an answer) is not a cancel.
      const target = event.target as HTMLElement | null;
      const inField = target?.tagName === 'INPUT' || target?.tagName === 'SELECT';
      if (event.key === 'Escape' && runningTurn && !inField) {
        event.preventDefault();
        void cancel();
      }
    };
    window.addEventListener('keydown', onEscape);
    return () => window.removeEventListener('keydown', onEscape);
  });

  const parked = projection?.state === 'parked';
  const closed = projection?.state === 'closed';
  return (
    <section className="conversation" aria-label="Conversation view">
      <header className="conversation-header">
        <a className="back" href="/" onClick={onLinkClick} aria-label="Back to conversations">
          ←
        </a>
        <div className="title-block">
          <h2 className="title">{projection?.title ?? 'Untitled conversation'}</h2>
          <div className="meta small muted">
            {agentName ? <span>with {agentName}</span> : null}
            {projection ? (
              <span className={`badge state-${projection.state}`}>
                {stateLabels[projection.state]}
              </span>
            ) : null}
          </div>
        </div>
        <span
          className={`connection ${connection}`}
          role="status"
          aria-label={`Connection: ${connectionLabels[connection]}`}
        >
          <span className="dot" aria-hidden="true" />
          {connectionLabels[connection]}
        </span>
        <button
          type="button"
          aria-expanded={showUsage}
          onClick={() => {
            setShowUsage((shown) => !shown);
            conversation.refresh();
          }}
        >
          Usage
        </button>
        <button
          type="button"
          aria-expanded={showCheckpoints}
          onClick={() => setShowCheckpoints((shown) => !shown)}
        >
          Checkpoints
        </button>
        <label className="read-aloud small">
          <input
            type="checkbox"
            checked={readAloud}
            onChange={(event) => {
              setReadAloud(event.target.checked);
              setSpeechError(null);
              if (!event.target.checked) speaker.current?.stop();
            }}
          />
          <span className="read-aloud-icon" aria-hidden="true">
            Aloud
          </span>
          <span className="read-aloud-text">Read replies aloud</span>
        </label>
      </header>
      {/* The clips read aloud play here, one after the other. */}
      {readAloud ? (
        <audio ref={player} className="reader" aria-label="Read aloud" controls />
      ) : null}
      {speechError ? (
        <p className="banner" role="alert">
          Reading aloud failed ({speechError}).
        </p>
      ) : null}
      {showCheckpoints ? (
        <Checkpoints
          client={client}
          sessionId={sessionId}
          latest={projection?.latest_sequence ?? 0}
        />
      ) : null}
      {showUsage && projection ? (
        <div className="usage-panel" role="region" aria-label="Session usage">
          This conversation so far: {projection.usage.input_tokens} tokens in ·{' '}
          {projection.usage.output_tokens} tokens out · {formatCost(projection.usage.cost_usd)}
        </div>
      ) : null}
      {projection && (projection.data !== null || projection.result !== null) ? (
        <details className="state-panel" aria-label="Conversation state">
          <summary>State{projection.result !== null ? ' and result' : ''}</summary>
          {projection.data !== null ? (
            <pre className="small">{JSON.stringify(projection.data, null, 2)}</pre>
          ) : null}
          {projection.result !== null ? (
            <>
              <p className="small muted">Result</p>
              <pre className="small">{JSON.stringify(projection.result, null, 2)}</pre>
            </>
          ) : null}
        </details>
      ) : null}
      <SessionPanels
        client={client}
        sessionId={sessionId}
        changedAt={state.panelsChangedAt}
        ephemeral={state.ephemeralPanels}
        openedAt={opened.current?.sessionId === sessionId ? opened.current.sequence : null}
      />
      {closed ? (
        <p className="banner" role="note">
          This conversation is completed: it takes no more messages.
        </p>
      ) : null}
      {parked ? (
        <p className="banner" role="note">
          This conversation is paused after repeated failures. New messages wait until an operator
          resumes it.
        </p>
      ) : null}
      <Thread
        client={client}
        sessionId={sessionId}
        state={state}
        pending={conversation.pending}
        me={props.me}
        people={people}
        agent={agent}
        agentName={agentName || 'The agent'}
        writing={conversation.writing}
        endRef={bottom}
        replyIds={conversation.replyIds}
        onRetry={(post) => {
          conversation
            .send(post.text, post.turnId, post.attachments)
            .catch((error: unknown) => setNotice(explainRequestError(error)));
        }}
      />
      {notice ? (
        <p className="error small composer-notice" role="alert">
          {notice}
        </p>
      ) : null}
      <Composer
        client={client}
        sessionId={sessionId}
        closed={closed}
        runningTurn={runningTurn}
        onCancel={() => void cancel()}
        onSend={send}
      />
    </section>
  );
}
