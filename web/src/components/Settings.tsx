import { useEffect, useState } from 'react';
import type { ParleyClient, Preferences } from 'parley/client';
import { savePreferences } from '../preferences';
import { explainRequestError, setDisplay } from '../words';

/** Every time zone the browser knows, for the picker (empty: the browser's own). */
function timeZones(): string[] {
  const intl = Intl as typeof Intl & { supportedValuesOf?: (key: string) => string[] };
  return intl.supportedValuesOf?.('timeZone') ?? ['UTC'];
}

/**
 * The signed-in user's preferences: the language and time zone their agents are told and
 * the app shows dates in. The other preferences are kept as the server has them.
 */
export function Settings(props: { client: ParleyClient }) {
  const [saved, setSaved] = useState<Preferences | null>(null);
  const [language, setLanguage] = useState('');
  const [timezone, setTimezone] = useState('');
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
      },
      (failure) => live && setError(explainRequestError(failure)),
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
      });
      setSaved(stored);
      setLanguage(stored.language ?? '');
      setDisplay(stored.language, stored.timezone);
      setStatus('saved');
    } catch (failure) {
      setError(explainRequestError(failure));
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
