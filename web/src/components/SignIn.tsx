import { useState } from 'react';

/** The server requires an API key: ask for it (kept in this tab's session storage only). */
export function SignIn(props: { error: string | null; onKey: (key: string) => void }) {
  const [key, setKey] = useState('');
  return (
    <main className="sign-in">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (key.trim()) props.onKey(key.trim());
        }}
      >
        <h1>Parley</h1>
        <p className="muted">
          This server needs an API key. It stays in this tab and is sent only to this server.
        </p>
        <label>
          API key
          <input
            type="password"
            autoComplete="current-password"
            value={key}
            onChange={(event) => setKey(event.target.value)}
            aria-label="API key"
            autoFocus
          />
        </label>
        {props.error ? (
          <p className="error" role="alert">
            {props.error}
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={!key.trim()}>
          Sign in
        </button>
      </form>
    </main>
  );
}
