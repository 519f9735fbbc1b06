import { useEffect, useRef, useState } from 'react';
import type { ParleyClient } from 'parley/client';
import { explainRequestError } from '../words';

/**
 * Speech input: a button that records from the microphone and, once stopped, sends the
 * recording to `POST /api/v1/transcriptions`; what was heard goes to `onHeard`. Shown only
 * when the server takes speech (`GET /api/v1/voices` says `transcription`): without a
 * transcription model there is no button, rather than one that fails (only a hidden mark,
 * `data-speech-input="off"`, that the answer came and said so).
 */
export function Microphone(props: {
  client: ParleyClient;
  disabled: boolean;
  onHeard: (text: string) => void;
  onProblem: (message: string) => void;
}) {
  const { client } = props;
  // Null until the server answered.
  const [available, setAvailable] = useState<boolean | null>(null);
  const [recording, setRecording] = useState(false);
  const [hearing, setHearing] = useState(false);
  // Parts of the recording so far (the recorder hands one over every quarter second).
  const [parts, setParts] = useState(0);
  const recorder = useRef<MediaRecorder | null>(null);

  useEffect(() => {
    let live = true;
    client
      .listVoices()
      .then((voices) => live && setAvailable(voices.transcription === true))
      .catch(() => live && setAvailable(false));
    return () => {
      live = false;
      recorder.current?.stop();
    };
  }, [client]);

  if (available === null) return null;
  if (!available || typeof MediaRecorder === 'undefined')
    return <span hidden data-speech-input="off" />;

  async function start() {
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch {
      props.onProblem('The microphone is not available (allow it in the browser to speak).');
      return;
    }
    const chunks: Blob[] = [];
    const started = new MediaRecorder(stream);
    started.ondataavailable = (event) => {
      chunks.push(event.data);
      setParts(chunks.length);
    };
    started.onstop = () => {
      for (const track of stream.getTracks()) track.stop();
      recorder.current = null;
      setRecording(false);
      const audio = new Blob(chunks, { type: started.mimeType });
      if (audio.size === 0) return;
      setHearing(true);
      client
        .transcribe(audio, { mediaType: started.mimeType })
        .then((heard) => props.onHeard(heard.text))
        .catch((error: unknown) => props.onProblem(explainRequestError(error)))
        .finally(() => setHearing(false));
    };
    setParts(0);
    started.start(250);
    recorder.current = started;
    setRecording(true);
  }

  return (
    <button
      type="button"
      className={`microphone${recording ? ' recording' : ''}`}
      disabled={props.disabled || hearing}
      aria-label={recording ? 'Stop recording' : 'Speak a message'}
      aria-pressed={recording}
      data-parts={parts}
      title={hearing ? 'Listening to what you said…' : recording ? 'Stop recording' : 'Speak'}
      onClick={() => (recording ? recorder.current?.stop() : void start())}
    >
      {hearing ? '…' : recording ? '■' : '🎤'}
    </button>
  );
}
