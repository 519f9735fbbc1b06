import { useChat } from '@ai-sdk/react';
import { lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai';
import { useEffect, useMemo, useState } from 'react';
import { ParleyClient } from 'parley/client';
import { ParleyChatTransport, isAbandonedPart, toUIMessages } from 'parley/ai-sdk';

// The whole integration: a Parley client, and its transport given to useChat. The chat
// id is the Parley session id; the page keeps it in its URL, so a reload reopens it.
const client = new ParleyClient({ baseUrl: window.location.origin });
const transport = new ParleyChatTransport({ client });

export function App() {
  const [chat, setChat] = useState<{ id: string; messages: UIMessage[] } | null>(null);
  useEffect(() => {
    void (async () => {
      let id = new URLSearchParams(window.location.search).get('session');
      if (!id) {
        id = (await client.createSession({ title: 'useChat example' })).session_id;
        window.history.replaceState(null, '', `?session=${id}`);
      }
      const transcript = await client.listMessages(id, { limit: 200 });
      setChat({ id, messages: toUIMessages(transcript.items) });
    })();
  }, []);
  if (!chat) return <p>Loading…</p>;
  return <Chat id={chat.id} initial={chat.messages} />;
}

function Chat({ id, initial }: { id: string; initial: UIMessage[] }) {
  const { messages, sendMessage, status, stop, error, addToolApprovalResponse } = useChat({
    id,
    messages: initial,
    transport,
    // After a reload, reconnectToStream picks up the running turn from Parley's journal.
    resume: true,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState('');
  const busy = status === 'submitted' || status === 'streaming';
  const shown = useMemo(() => messages, [messages]);
  return (
    <main style={{ maxWidth: 680, margin: '2rem auto', fontFamily: 'system-ui, sans-serif' }}>
      <h1>useChat on Parley</h1>
      <p data-testid="status">status: {status}</p>
      <ol aria-label="Messages">
        {shown.map((message) => (
          <li key={message.id} data-role={message.role} aria-label={`${message.role} message`}>
            <strong>{message.role === 'user' ? 'You' : 'Assistant'}: </strong>
            {message.parts.map((part, index) => {
              if (part.type === 'text') {
                return isAbandonedPart(part) ? null : <span key={index}>{part.text}</span>;
              }
              if (part.type === 'dynamic-tool') {
                return (
                  <div key={index} aria-label={`tool ${part.toolName}`}>
                    <code>
                      {part.toolName}({JSON.stringify(part.input)})
                    </code>{' '}
                    {part.state === 'approval-requested' ? (
                      <>
                        <button
                          type="button"
                          onClick={() =>
                            void addToolApprovalResponse({ id: part.approval.id, approved: true })
                          }
                        >
                          Approve
                        </button>
                        <button
                          type="button"
                          onClick={() =>
                            void addToolApprovalResponse({
                              id: part.approval.id,
                              approved: false,
                              reason: 'rejected in the example',
                            })
                          }
                        >
                          Reject
                        </button>
                      </>
                    ) : part.state === 'output-available' ? (
                      <span>→ {JSON.stringify(part.output)}</span>
                    ) : part.state === 'output-denied' ? (
                      <span>→ denied</span>
                    ) : part.state === 'output-error' ? (
                      <span>→ {part.errorText}</span>
                    ) : null}
                  </div>
                );
              }
              return null;
            })}
          </li>
        ))}
      </ol>
      {error ? <p role="alert">{error.message}</p> : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!input.trim()) return;
          void sendMessage({ text: input });
          setInput('');
        }}
      >
        <input
          aria-label="Message"
          value={input}
          onChange={(event) => setInput(event.target.value)}
          disabled={busy}
        />
        <button type="submit" disabled={busy}>
          Send
        </button>
        <button type="button" onClick={() => void stop()} disabled={!busy}>
          Stop
        </button>
      </form>
    </main>
  );
}
