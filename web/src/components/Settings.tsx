import { useEffect, useState } from 'react';
import type { ParleyClient, Preferences, VoiceInfo } from 'parley/client';
import { savePreferences } from '../preferences';
import { explainRequestError, setDisplay } from '../words';

/** Every time zone the browser knows, for the picker (empty: the browser's own). */
function timeZones(): string[] {
  const intl = Intl as typeof Intl & { supportedValuesOf?: (key: string) => string[] };
  return intl.supportedValuesOf?.('timeZone') ?? ['UTC'];
}

/** A voice as the picker shows it: its name, then its language (or locale) when known. */
function voiceLabel(voice: VoiceInfo): string {
  const language = voice.language || voice.locale;
  return language ? `${voice.name} (${language})` : voice.name;
}

/** A refusal as the server gave it: its code first (`invalid_request: …`). */
function refusal(failure: unknown): string {
  const code = (failure as { code?: string } | null)?.code;
  return code ? `${code}: ${explainRequestError(failure)}` : explainRequestError(failure);
}

/**
 * The signed-in user's preferences: the language and time zone their agents are told and
 * the app shows dates in, and the voice notices are read aloud in (`system_voice`, one of
 * the catalog's). The other preferences are kept as the server has them; what is saved
 * goes to `onSaved`, so the open screens use it at once.
 */
export function Settings(props: {
  client: ParleyClient;
  onSaved?: (preferences: Preferences) => void;
}) {
  const [saved, setSaved] = useState<Preferences | null>(null);
  const [language, setLanguage] = useState('');
  const [timezone, setTimezone] = useState('');
  const [voice, setVoice] = useState('');
  const [voices, setVoices] = useState<VoiceInfo[]>([]);
  const [status, setStatus] = useState<'idle' | 'saving' | 'saved'>('idle');
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    props.client.preferences().then(
      (found) => {
        if (!live) return;
        setSaved(found);
        setLanguage(found.language ?? '');
        setTimezone(found.timezone ?? '');
        setVoice(found.system_voice ?? '');
      },
      (failure) => live && setError(refusal(failure)),
    );
    props.client.listVoices().then(
      (catalog) => live && setVoices(catalog.items),
      () => {},
    );
    return () => {
      live = false;
    };
  }, [props.client]);

  async function save() {
    if (!saved) return;
    setStatus('saving');
    setError(null);
    try {
      const stored = await savePreferences(props.client, {
        language: language.trim() || null,
        timezone: timezone || null,
        system_voice: voice || null,
      });
      setSaved(stored);
      setLanguage(stored.language ?? '');
      setVoice(stored.system_voice ?? '');
      setDisplay(stored.language, stored.timezone);
      setStatus('saved');
      props.onSaved?.(stored);
    } catch (failure) {
      setError(refusal(failure));
      setStatus('idle');
    }
  }

  return (
    <section className="settings" aria-label="Settings">
      <h2>Settings</h2>
      {saved === null && error === null ? <p aria-busy="true">Loading…</p> : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        <label>
          Language
          <input
            value={language}
            onChange={(event) => {
              setLanguage(event.target.value);
              setStatus('idle');
            }}
            placeholder="e.g. en-GB, de-CH"
            aria-label="Language"
          />
        </label>
        <label>
          Time zone
          <select
            value={timezone}
            onChange={(event) => {
              setTimezone(event.target.value);
              setStatus('idle');
            }}
            aria-label="Time zone"
          >
            <option value="">The browser’s own</option>
            {timeZones().map((zone) => (
              <option key={zone} value={zone}>
                {zone}
              </option>
            ))}
          </select>
        </label>
        <label>
          System voice
          <select
            value={voice}
            onChange={(event) => {
              setVoice(event.target.value);
              setStatus('idle');
            }}
            aria-label="System voice"
          >
            <option value="">Default voice</option>
            {voices.map((entry) => (
              <option key={entry.id} value={entry.id}>
                {voiceLabel(entry)}
              </option>
            ))}
            {voice && !voices.some((entry) => entry.id === voice) ? (
              <option value={voice}>{voice}</option>
            ) : null}
          </select>
        </label>
        <p className="muted small">
          When replies are read aloud, a failed reply’s notice is read in the system voice.
        </p>
        <p className="muted small">
          Your agents are told your language and local time; dates here follow them.
        </p>
        {error ? (
          <p className="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={saved === null || status === 'saving'}>
          Save
        </button>
        {status === 'saved' ? (
          <span role="status" className="muted small">
            {' '}
            Saved
          </span>
        ) : null}
      </form>
    </section>
  );
}
