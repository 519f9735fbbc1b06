import { useCallback, useEffect, useMemo, useState } from 'react';
import type { AgentInfo, Me, ParleyClient, SessionProjection } from 'parley/client';
import { makeClient, storedKey, storeKey } from './api';
import { Conversation } from './components/Conversation';
import { Budgets } from './components/Budgets';
import { Inbox } from './components/Inbox';
import { NewSession } from './components/NewSession';
import { SessionList } from './components/SessionList';
import { Settings } from './components/Settings';
import { SignIn } from './components/SignIn';
import { onLinkClick, useRoute } from './router';
import { explainRequestError, setDisplay } from './words';

type Auth =
  { status: 'checking' } | { status: 'needs-key'; error: string | null } | { status: 'in'; me: Me };

export function App() {
  const [apiKey, setApiKey] = useState<string | null>(() => storedKey());
  const client = useMemo(() => makeClient(apiKey), [apiKey]);
  const [auth, setAuth] = useState<Auth>({ status: 'checking' });

  useEffect(() => {
    let live = true;
    client.me().then(
      async (me) => {
        // Dates follow the user's saved language and time zone; without them, the browser's.
        const saved = await client.preferences().catch(() => null);
        if (saved) setDisplay(saved.language, saved.timezone);
        if (live) setAuth({ status: 'in', me });
      },
      (error: { code?: string }) => {
        if (!live) return;
        if (error.code === 'unauthorized') {
          if (apiKey) storeKey(null);
          setAuth({
            status: 'needs-key',
            error: apiKey ? 'That API key is not valid here.' : null,
          });
        } else {
          setAuth({ status: 'needs-key', error: explainRequestError(error) });
        }
      },
    );
    return () => {
      live = false;
    };
  }, [client, apiKey]);

  if (auth.status === 'checking')
    return (
      <main className="splash" aria-busy="true">
        Loading…
      </main>
    );
  if (auth.status === 'needs-key') {
    return (
      <SignIn
        error={auth.error}
        onKey={(key) => {
          storeKey(key);
          setAuth({ status: 'checking' });
          setApiKey(key);
        }}
      />
    );
  }
  return (
    <Shell
      client={client}
      me={auth.me}
      onSignOut={() => {
        storeKey(null);
        setApiKey(null);
        setAuth({ status: 'checking' });
      }}
    />
  );
}

const sessionsPollMs = 4000;

function Shell(props: { client: ParleyClient; me: Me; onSignOut: () => void }) {
  const { client, me } = props;
  const route = useRoute();
  const [agents, setAgents] = useState<AgentInfo[]>([]);
  const [sessions, setSessions] = useState<SessionProjection[]>([]);
  const [older, setOlder] = useState<SessionProjection[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [inboxCount, setInboxCount] = useState(0);

  useEffect(() => {
    client.listAgents().then(
      (answer) => setAgents(answer.items),
      () => {},
    );
  }, [client]);

  const loadSessions = useCallback(async () => {
    try {
      const page = await client.listSessions({ limit: 100 });
      setSessions(page.items);
      setNextCursor((current) => current ?? page.next_cursor);
    } catch {
      // the list keeps what it had; the next poll tries again
    } finally {
      setLoading(false);
    }
  }, [client]);

  useEffect(() => {
    void loadSessions();
    const timer = setInterval(() => void loadSessions(), sessionsPollMs);
    return () => clearInterval(timer);
  }, [loadSessions]);

  useEffect(() => {
    const count = () =>
      client.listInputs({ limit: 200 }).then(
        (page) => setInboxCount(page.items.length),
        () => {},
      );
    void count();
    const timer = setInterval(() => void count(), 5000);
    return () => clearInterval(timer);
  }, [client]);

  const loadOlder = async () => {
    if (!nextCursor) return;
    const page = await client.listSessions({ limit: 100, cursor: nextCursor });
    setOlder((current) => [...current, ...page.items]);
    setNextCursor(page.next_cursor);
  };

  const known = new Set(sessions.map((session) => session.session_id));
  const all = [...sessions, ...older.filter((session) => !known.has(session.session_id))];
  const selected = route.name === 'session' ? route.sessionId : null;
  const focus = route.name === 'home' ? 'list' : 'main';

  return (
    <div className={`shell focus-${focus}`}>
      <header className="topbar">
        <a className="brand" href="/" onClick={onLinkClick}>
          Parley
        </a>
        <nav aria-label="Main" className="topnav">
          <a
            href="/inbox"
            onClick={onLinkClick}
            aria-current={route.name === 'inbox' ? 'page' : undefined}
          >
            Inbox
            {inboxCount > 0 ? (
              <span className="count" aria-label={`${inboxCount} waiting`}>
                {inboxCount}
              </span>
            ) : null}
          </a>
          {me.roles.includes('admin') || me.roles.includes('*') ? (
            <a
              href="/budgets"
              onClick={onLinkClick}
              aria-current={route.name === 'budgets' ? 'page' : undefined}
            >
              Budgets
            </a>
          ) : null}
          <a
            href="/settings"
            onClick={onLinkClick}
            aria-current={route.name === 'settings' ? 'page' : undefined}
          >
            Settings
          </a>
        </nav>
        <span className="whoami small muted" title={`tenant ${me.tenant}`}>
          {me.user}
        </span>
        {me.mode === 'keys' ? (
          <button type="button" onClick={props.onSignOut}>
            Sign out
          </button>
        ) : null}
      </header>
      <aside className="sidebar">
        <SessionList
          sessions={all}
          loading={loading}
          selected={selected}
          hasMore={nextCursor !== null}
          onLoadMore={() => void loadOlder()}
        />
      </aside>
      <main className="main">
        {route.name === 'session' ? (
          <Conversation
            key={route.sessionId}
            client={client}
            sessionId={route.sessionId}
            me={me.user}
            agents={agents}
          />
        ) : route.name === 'new' ? (
          <NewSession client={client} agents={agents} onCreated={() => void loadSessions()} />
        ) : route.name === 'inbox' ? (
          <Inbox client={client} agents={agents} onCount={setInboxCount} />
        ) : route.name === 'budgets' ? (
          <Budgets client={client} />
        ) : route.name === 'settings' ? (
          <Settings client={client} />
        ) : (
          <NewSession
            client={client}
            agents={agents}
            onCreated={() => void loadSessions()}
            landing
          />
        )}
      </main>
    </div>
  );
}
