import type { PlatformUpdate } from '../platforms.js';
import type { Findings, Journal } from './findings.js';

/** What the checker is told of one platform: the updates sent, and the posts of each. */
export interface PlatformEvidence {
  platform: string;
  updates: PlatformUpdate[];
  /** The posts in an update's chat carrying its reply (first text or an edit). */
  repliesTo(update: PlatformUpdate): { posted_at: number }[];
  /** What the update's chat (or thread) holds, for a finding: the bot's posts, last texts. */
  describeChat?(update: PlatformUpdate): string;
}

export interface PlatformFigures {
  updates: number;
  /** Updates answered 200. */
  acknowledged: number;
  /** Replies posted more than once (Telegram's sendMessage has no idempotency key). */
  duplicates: number;
  /** The longest time between the first post of a reply and its duplicate, in ms. */
  longestWindowMs: number;
  details: string[];
}

/**
 * A chat platform (docs/adapters.md) against the journal and what its fake received:
 * - `platform message admitted once` (lost / doubled): an update answered 200 is one user
 *   message in the transcript (Telegram retries an update with the same ids: the turn id
 *   is the message id, so a retry is the same turn);
 * - `platform reply posted` (lost): each such message's reply reached the chat.
 * A reply posted twice is not a violation where the platform gives no idempotency key
 * (Telegram): each duplicate and its window — the time between the two posts, how long
 * a person saw two copies — are counted and reported.
 */
export function checkPlatform(
  journal: Journal,
  evidence: PlatformEvidence,
  findings: Findings,
): PlatformFigures {
  const userMessages = new Map<string, number>();
  for (const message of journal.snapshot.messages) {
    if (message.role !== 'user') continue;
    userMessages.set(message.content, (userMessages.get(message.content) ?? 0) + 1);
  }
  const figures: PlatformFigures = {
    updates: evidence.updates.length,
    acknowledged: evidence.updates.filter((update) => update.acknowledged).length,
    duplicates: 0,
    longestWindowMs: 0,
    details: [],
  };
  for (const update of evidence.updates) {
    if (!update.acknowledged) continue;
    const where = `${evidence.platform} update ${update.updateId} (chat ${update.chatId})`;
    const count = userMessages.get(update.text) ?? 0;
    if (count !== 1) {
      findings.add(
        count === 0 ? 'lost' : 'doubled',
        'platform message admitted once',
        `${where}: ${count} transcript rows of "${update.text}"`,
      );
    }
    const posts = evidence.repliesTo(update);
    if (posts.length === 0) {
      const chat = evidence.describeChat?.(update);
      findings.add(
        'lost',
        'platform reply posted',
        `${where}: no reply posted${chat ? `; the chat holds ${chat}` : ''}`,
      );
    } else if (posts.length > 1) {
      const times = posts.map((post) => post.posted_at).sort((a, b) => a - b);
      const window = (times[times.length - 1] as number) - (times[0] as number);
      figures.duplicates += 1;
      figures.longestWindowMs = Math.max(figures.longestWindowMs, window);
      figures.details.push(`${where}: reply posted ${posts.length} times over ${window} ms`);
    }
  }
  return figures;
}
