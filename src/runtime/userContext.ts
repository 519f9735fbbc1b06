import type { Queryable } from '../store/db.js';
import { readPreferencesOf } from '../store/users.js';

/**
 * What an agent is told of the people a burst answers, from their preferences
 * (docs/web.md, "Preferences"): each one's language, and local time in their time zone,
 * so "tomorrow morning" means theirs. Nothing for people who saved neither. Minutes only:
 * the line changes once a minute, not with every call.
 */
export async function userContext(
  db: Queryable,
  tenant: string,
  authors: string[],
  now: Date,
): Promise<string> {
  if (authors.length === 0) return '';
  const people = [...new Set(authors)];
  const saved = await readPreferencesOf(db, tenant, people);
  const lines: string[] = [];
  // In the order the burst names them, whatever order the rows come in.
  for (const author of people) {
    const preferences = saved.get(author);
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
