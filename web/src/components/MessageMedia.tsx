import { useEffect, useRef, useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { objectUrlOf, useAttachmentUrl } from '../media';

/** The images a user's message carried (attachments of the session), as thumbnails. */
export function AttachedImages(props: {
  client: ParleyClient;
  sessionId: string;
  attachmentIds: string[];
}) {
  if (props.attachmentIds.length === 0) return null;
  return (
    <div className="attached-images">
      {props.attachmentIds.map((attachmentId) => (
        <AttachedImage key={attachmentId} {...props} attachmentId={attachmentId} />
      ))}
    </div>
  );
}

function AttachedImage(props: { client: ParleyClient; sessionId: string; attachmentId: string }) {
  const url = useAttachmentUrl(props.client, props.sessionId, props.attachmentId);
  return url ? (
    <img src={url} alt="Attached image" data-attachment-id={props.attachmentId} />
  ) : (
    <span className="image-loading small muted">Image…</span>
  );
}

type Speech =
  | { status: 'idle' }
  | { status: 'loading' }
  | { status: 'ready'; url: string }
  | { status: 'failed'; code: string };

/**
 * Plays a reply in its agent's voice (`GET …/messages/{id}/speech`, kept by the server once
 * made): fetched on the first press, then played from an object URL in an `<audio>`.
 */
export function SpeakButton(props: { client: ParleyClient; sessionId: string; messageId: string }) {
  const [speech, setSpeech] = useState<Speech>({ status: 'idle' });
  const audio = useRef<HTMLAudioElement>(null);
  const url = speech.status === 'ready' ? speech.url : null;
  useEffect(() => (url ? () => URL.revokeObjectURL(url) : undefined), [url]);

  async function play() {
    if (speech.status === 'ready') {
      if (audio.current) {
        audio.current.currentTime = 0;
        audio.current.play().catch(() => {});
      }
      return;
    }
    setSpeech({ status: 'loading' });
    try {
      const media = await props.client.messageSpeech(props.sessionId, props.messageId);
      setSpeech({ status: 'ready', url: objectUrlOf(media) });
    } catch (error) {
      setSpeech({ status: 'failed', code: (error as { code?: string }).code ?? 'speech_failed' });
    }
  }

  return (
    <div className="speak">
      <button
        type="button"
        className="small"
        aria-label="Play reply"
        disabled={speech.status === 'loading'}
        onClick={() => void play()}
      >
        {speech.status === 'loading' ? 'Loading…' : '▶ Play'}
      </button>
      {speech.status === 'failed' ? (
        <span className="error small" role="alert">
          Could not read it aloud ({speech.code}).
        </span>
      ) : null}
      {url ? (
        // Autoplay after the press: the press is the gesture the browser asks for.
        <audio ref={audio} src={url} controls autoPlay aria-label="Reply audio" />
      ) : null}
    </div>
  );
}
