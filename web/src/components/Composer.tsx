import { useEffect, useRef, useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { draftOf, handedDrafts, type Draft, forgetHandedDrafts } from '../media';
import { explainRequestError } from '../words';
import { Microphone } from './Microphone';

/** What the server takes (src/api/imageTypes.ts); others are sent too, for it to refuse. */
const imageTypes = 'image/png,image/jpeg,image/webp,image/gif';

/**
 * The message box of a conversation, with images: the attach button, a drop onto the
 * composer, or a paste. Attached images show as removable thumbnails; they are uploaded
 * when the message is sent (so a removed one costs nothing), and what the server refuses
 * (its type, its size) is shown with the server's code and message, the message kept.
 */
export function Composer(props: {
  client: ParleyClient;
  sessionId: string;
  closed: boolean;
  runningTurn: string | null;
  onCancel: () => void;
  onSend: (message: string, images: { attachmentId: string; url: string }[]) => Promise<void>;
}) {
  const { client, sessionId } = props;
  const [text, setText] = useState('');
  const [drafts, setDrafts] = useState<Draft[]>(() => handedDrafts(sessionId));
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [dragging, setDragging] = useState(false);
  const input = useRef<HTMLTextAreaElement>(null);
  const picker = useRef<HTMLInputElement>(null);

  useEffect(() => forgetHandedDrafts(sessionId), [sessionId]);
  useEffect(() => input.current?.focus(), [sessionId]);

  function attach(files: Iterable<File>) {
    const added: Draft[] = [];
    const refused: string[] = [];
    for (const file of files) {
      if (file.type.startsWith('image/')) added.push(draftOf(file, file.name || 'pasted image'));
      else refused.push(`${file.name || 'that'} (${file.type || 'unknown type'})`);
    }
    setDrafts((current) => [...current, ...added]);
    setNotice(refused.length > 0 ? `Only images can be attached: ${refused.join(', ')}.` : null);
  }

  function remove(key: string) {
    setDrafts((current) => {
      const gone = current.find((draft) => draft.key === key);
      if (gone) URL.revokeObjectURL(gone.url);
      return current.filter((draft) => draft.key !== key);
    });
  }

  /** Uploads what is not uploaded yet; null when the server refused one. */
  async function upload(): Promise<Draft[] | null> {
    const uploaded: Draft[] = [];
    let refused = false;
    for (const draft of drafts) {
      if (draft.attachmentId) {
        uploaded.push(draft);
        continue;
      }
      try {
        const stored = await client.uploadAttachment(sessionId, draft.file, {
          mediaType: draft.file.type,
        });
        uploaded.push({ ...draft, attachmentId: stored.attachment_id, error: undefined });
      } catch (error) {
        const code = (error as { code?: string }).code ?? 'error';
        uploaded.push({ ...draft, error: `${code}: ${explainRequestError(error)}` });
        refused = true;
      }
    }
    setDrafts(uploaded);
    return refused ? null : uploaded;
  }

  async function send() {
    const message = text.trim();
    if (!message || busy) return;
    setNotice(null);
    setBusy(true);
    try {
      const uploaded = await upload();
      if (uploaded === null) {
        setNotice('The server refused an image: remove it to send the message.');
        return;
      }
      setText('');
      setDrafts([]);
      await props.onSend(
        message,
        uploaded.map((draft) => ({ attachmentId: draft.attachmentId!, url: draft.url })),
      );
    } catch (error) {
      setNotice(explainRequestError(error));
    } finally {
      setBusy(false);
    }
  }

  function onKeyDown(event: React.KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    }
  }

  const { closed } = props;
  return (
    <form
      className={`composer${dragging ? ' dragging' : ''}`}
      aria-label="Composer"
      onSubmit={(event) => {
        event.preventDefault();
        void send();
      }}
      onDragOver={(event) => {
        if (closed || !event.dataTransfer.types.includes('Files')) return;
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(event) => {
        setDragging(false);
        if (closed || event.dataTransfer.files.length === 0) return;
        event.preventDefault();
        attach(event.dataTransfer.files);
      }}
    >
      {notice ? (
        <p className="error small" role="alert">
          {notice}
        </p>
      ) : null}
      {drafts.length > 0 ? (
        <ul className="drafts" aria-label="Attached images">
          {drafts.map((draft) => (
            <li key={draft.key} className={draft.error ? 'refused' : undefined}>
              <img src={draft.url} alt={draft.name} />
              <button
                type="button"
                className="remove"
                aria-label={`Remove ${draft.name}`}
                onClick={() => remove(draft.key)}
              >
                ×
              </button>
              {draft.error ? (
                <span className="error small" role="alert">
                  {draft.name}: {draft.error}
                </span>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
      <div className="composer-row">
        <input
          ref={picker}
          type="file"
          accept={imageTypes}
          multiple
          hidden
          aria-label="Image files"
          onChange={(event) => {
            if (event.target.files) attach(event.target.files);
            event.target.value = '';
          }}
        />
        <button
          type="button"
          className="attach"
          disabled={closed}
          aria-label="Attach images"
          title="Attach images (or drop or paste them here)"
          onClick={() => picker.current?.click()}
        >
          +
        </button>
        <Microphone
          client={client}
          disabled={closed}
          onHeard={(heard) => {
            setText((current) => (current.trim() === '' ? heard : `${current.trimEnd()} ${heard}`));
            input.current?.focus();
          }}
          onProblem={setNotice}
        />
        <textarea
          ref={input}
          aria-label="Message"
          disabled={closed}
          placeholder={closed ? 'This conversation is completed' : 'Write a message…'}
          value={text}
          rows={Math.min(8, Math.max(1, text.split('\n').length))}
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
          onPaste={(event) => {
            const files = [...event.clipboardData.files];
            if (files.length === 0) return;
            event.preventDefault();
            attach(files);
          }}
        />
        {props.runningTurn ? (
          <button
            type="button"
            className="danger"
            onClick={props.onCancel}
            title="Stop the running turn (Esc)"
          >
            Stop
          </button>
        ) : null}
        <button type="submit" className="primary" disabled={closed || busy || !text.trim()}>
          Send
        </button>
      </div>
      <p className="hint small muted">
        Enter sends · Shift+Enter adds a line · Esc stops the reply · drop or paste images
      </p>
    </form>
  );
}
