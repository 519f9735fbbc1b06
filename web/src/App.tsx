import { lazy, Suspense, useCallback, useEffect, useMemo, useState } from 'react';
import type { AgentInfo, Me, ParleyClient, Preferences, SessionProjection } from 'parley/client';
import { makeClient, storedKey, storeKey } from './api';
import { Avatar } from './components/Avatar';
import { Conversation } from './components/Conversation';
import { Budgets } from './components/Budgets';
import { Inbox } from './components/Inbox';
import { NewSession } from './components/NewSession';
import { SessionList } from './components/SessionList';
import { Settings } from './components/Settings';
import { SignIn } from './components/SignIn';
import { inboxEvents, LiveIndicator, LiveProvider, sessionEventOf, useLiveRefresh } from './live';
import { savePreferences } from './preferences';
import { onLinkClick, useRoute } from './router';
import { explainRequestError, setDisplay } from './words';

// The desktop (and its charting library) loads when first opened.
const Desktop = lazy(() =>
  import('./components/desktop/Desktop').then((module) => ({ default: module.Desktop })),
);
// So does the photo explorer.
const Photos = lazy(() =>
  import('./components/Photos').then((module) => ({ default: module.Photos })),
);

type Auth =
  | { status: 'checking' }
  | { status: 'needs-key'; error: string | null }
  | { status: 'in'; me: Me; preferences: Preferences | null };

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
        if (live) setAuth({ status: 'in', me, preferences: saved });
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
    <LiveProvider client={client}>
      <Shell
        client={client}
        me={auth.me}
        preferences={auth.preferences}
        onSignOut={() => {
          storeKey(null);
          setApiKey(null);
          setAuth({ status: 'checking' });
        }}
      />
    </LiveProvider>
  );
}

const sessionsPollMs = 4000;

function Shell(props: {
  client: ParleyClient;
  me: Me;
  preferences: Preferences | null;
  onSignOut: () => void;
}) {
  const { client, me } = props;
  // The preferences the screens use (docs/web.md, "Preferences"); each change is saved.
  const [preferences, setPreferences] = useState(props.preferences);
  const savePreference = useCallback(
    (change: Partial<Preferences>) =>
      savePreferences(client, change).then(setPreferences, () => {}),
    [client],
  );
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

  // Fresh from the user stream: any event of a session the user sees may change the list.
  useLiveRefresh(loadSessions, sessionEventOf(), { fallbackMs: sessionsPollMs });

  const countInbox = useCallback(
    () =>
      client.listInputs({ limit: 200 }).then(
        (page) => setInboxCount(page.items.length),
        () => {},
      ),
    [client],
  );
  useLiveRefresh(countInbox, inboxEvents, { fallbackMs: 5000 });

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

  // The conversation opened last is the one the first page offers to continue.
  const activeSessionId = preferences?.active_session_id ?? null;
  useEffect(() => {
    if (selected !== null && selected !== activeSessionId)
      void savePreference({ active_session_id: selected });
  }, [selected, activeSessionId, savePreference]);
  const continuing = all.find((session) => session.session_id === activeSessionId) ?? null;
  const newSession = {
    client,
    agents,
    preferredAgent: preferences?.active_agent ?? null,
    onAgentChosen: (agent: string) => void savePreference({ active_agent: agent }),
    onCreated: () => void loadSessions(),
  };
  const shownName = me.display_name ?? me.user;

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
            href="/desktop"
            onClick={onLinkClick}
            aria-current={route.name === 'desktop' ? 'page' : undefined}
          >
            Desktop
          </a>
          <a
            href="/photos"
            onClick={onLinkClick}
            aria-current={route.name === 'photos' ? 'page' : undefined}
          >
            Photos
          </a>
          <a
            href="/settings"
            onClick={onLinkClick}
            aria-current={route.name === 'settings' ? 'page' : undefined}
          >
            Settings
          </a>
        </nav>
        <LiveIndicator />
        <Avatar name={shownName} url={me.avatar_url} />
        <span className="whoami small muted" title={`${me.user}, tenant ${me.tenant}`}>
          {shownName}
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
            systemVoice={preferences?.system_voice ?? null}
          />
        ) : route.name === 'new' ? (
          <NewSession {...newSession} />
        ) : route.name === 'inbox' ? (
          <Inbox client={client} agents={agents} onCount={setInboxCount} />
        ) : route.name === 'budgets' ? (
          <Budgets client={client} />
        ) : route.name === 'desktop' ? (
          <Suspense
            fallback={
              <p className="splash" aria-busy="true">
                Loading the desktop…
              </p>
            }
          >
            <Desktop client={client} me={me} />
          </Suspense>
        ) : route.name === 'photos' ? (
          <Suspense
            fallback={
              <p className="splash" aria-busy="true">
                Loading the photos…
              </p>
            }
          >
            <Photos
              client={client}
              agent={agents.find((agent) => agent.name === preferences?.active_agent)?.name ?? null}
              onCreated={() => void loadSessions()}
            />
          </Suspense>
        ) : route.name === 'settings' ? (
          <Settings client={client} onSaved={setPreferences} />
        ) : (
          <NewSession {...newSession} landing continuing={continuing} />
        )}
      </main>
    </div>
  );
}
