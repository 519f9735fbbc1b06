import { useEffect, useState } from 'react';

/** The app's routes: the server answers index.html for each of them. */
export type Route =
  | { name: 'home' }
  | { name: 'session'; sessionId: string }
  | { name: 'new' }
  | { name: 'inbox' }
  | { name: 'budgets' }
  | { name: 'desktop' }
  | { name: 'photos' }
  | { name: 'settings' };

export function parseRoute(path: string): Route {
  const session = /^\/s\/([A-Za-z0-9_-]+)\/?$/.exec(path);
  if (session?.[1]) return { name: 'session', sessionId: session[1] };
  if (path === '/new') return { name: 'new' };
  if (path === '/inbox') return { name: 'inbox' };
  if (path === '/budgets') return { name: 'budgets' };
  if (path === '/desktop') return { name: 'desktop' };
  if (path === '/photos') return { name: 'photos' };
  if (path === '/settings') return { name: 'settings' };
  return { name: 'home' };
}

export function hrefOf(route: Route): string {
  switch (route.name) {
    case 'session':
      return `/s/${route.sessionId}`;
    case 'new':
      return '/new';
    case 'inbox':
      return '/inbox';
    case 'budgets':
      return '/budgets';
    case 'desktop':
      return '/desktop';
    case 'photos':
      return '/photos';
    case 'settings':
      return '/settings';
    default:
      return '/';
  }
}

const listeners = new Set<() => void>();

export function navigate(href: string): void {
  if (href === window.location.pathname) return;
  window.history.pushState(null, '', href);
  for (const listener of listeners) listener();
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.pathname));
  useEffect(() => {
    const update = () => setRoute(parseRoute(window.location.pathname));
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/** A same-origin link that navigates without a reload (and still works as a link). */
export function onLinkClick(event: React.MouseEvent<HTMLAnchorElement>): void {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey)
    return;
  event.preventDefault();
  navigate(event.currentTarget.getAttribute('href') ?? '/');
}
