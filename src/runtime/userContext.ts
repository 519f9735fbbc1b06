import type { SavedPreferences } from '../store/users.js';

/**
 * What an agent is told of the people a burst answers, from their saved preferences
 * (docs/web.md, "Preferences"; read as the burst's attempt starts, store/readHistory.ts):
 * each one's language, and local time in their time zone, so "tomorrow morning" means
 * theirs. Nothing for people who saved neither. Minutes only:
 * the line changes once a minute, not with every call.
 */
export function userContext(saved: SavedPreferences, authors: string[], now: Date): string {
  const lines: string[] = [];
  // In the order the burst names them, whatever order the rows come in.
  for (const author of new Set(authors)) {
    const preferences = Object.hasOwn(saved, author) ? saved[author] : undefined;
    if (!preferences) continue;
    const language = typeof preferences.language === 'string' ? preferences.language : null;
    const zone = typeof preferences.timezone === 'string' ? preferences.timezone : null;
    const parts: string[] = [];
    if (language) parts.push(`prefers the language ${language}`);
    if (zone) parts.push(`has the local time ${localTime(now, zone)} (${zone})`);
    if (parts.length > 0) lines.push(`The user ${author} ${parts.join(' and ')}.`);
  }
  return lines.join('\n');
}

/** `Thursday 3 December 2026, 10:15` in `zone`; the zone name alone if the runtime lacks it. */
export function localTime(now: Date, zone: string): string {
  try {
    const parts = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      weekday: 'long',
      day: 'numeric',
      month: 'long',
      year: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).formatToParts(now);
    const part = (type: string) => parts.find((each) => each.type === type)?.value ?? '';
    return `${part('weekday')} ${part('day')} ${part('month')} ${part('year')}, ${part('hour')}:${part('minute')}`;
  } catch {
    return 'unknown';
  }
}
