import type { ParleyClient, Preferences } from 'parley/client';

/**
 * Saves some of the user's preferences and keeps the others as the server has them now:
 * `PUT /api/v1/me/preferences` replaces the whole set (a key left out goes back to its
 * default), so each save reads first. Saves run one after the other, so two made close
 * together (an agent chosen, a panel collapsed) do not undo each other.
 */
let queue: Promise<unknown> = Promise.resolve();

export function savePreferences(
  client: ParleyClient,
  change: Partial<Preferences> | ((current: Preferences) => Partial<Preferences>),
): Promise<Preferences> {
  const run = queue.then(async () => {
    const current = await client.preferences();
    const changed = typeof change === 'function' ? change(current) : change;
    return client.savePreferences({ ...current, ...changed });
  });
  queue = run.catch(() => {});
  return run;
}

/** The desktop's sections a user collapsed (`preferences.desktop.collapsed`). */
export function collapsedSections(preferences: Preferences | null): string[] {
  const collapsed = preferences?.desktop.collapsed;
  return Array.isArray(collapsed)
    ? collapsed.filter((id): id is string => typeof id === 'string')
    : [];
}
