import type { Findings } from './findings.js';
import type { PlatformEvidence } from './platforms.js';

/**
 * A platform's evidence for the checker, with what makes a repeated post of a reply the
 * same message: Slack's metadata (`parley_reply`), which Parley reads back before it posts
 * again (docs/adapters.md, "Never posted twice"); null where the platform has none
 * (Telegram).
 */
export interface PlatformTraffic extends PlatformEvidence {
  idempotencyKey?: string | null;
}

/**
 * `platform reply posted once` (doubled): where posts carry an idempotency key, a reply
 * that reached the chat more than once is a violation, not a window to measure.
 * `checkPlatform` counts every duplicate with its window either way.
 */
export function checkPostedOnce(evidence: PlatformTraffic, findings: Findings): void {
  if (!evidence.idempotencyKey) return;
  for (const update of evidence.updates) {
    if (!update.acknowledged) continue;
    const posts = evidence.repliesTo(update).length;
    if (posts > 1) {
      findings.add(
        'doubled',
        'platform reply posted once',
        `${evidence.platform} update ${update.updateId} (chat ${update.chatId}): reply posted ${posts} times despite its ${evidence.idempotencyKey}`,
      );
    }
  }
}
