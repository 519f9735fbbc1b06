import type { Nudge } from '../store/types.js';
import type { ApprovalDeadline } from './toolPolicy.js';

/**
 * What a new approval does by itself while it waits, from `now` (ms since the epoch): each
 * step of its escalation chain `after_ms` after it was made, and its reminder
 * `remind_before_ms` before its deadline — in time order. What would come at or after the
 * deadline never happens (the safe default applies then), nor a reminder of an approval
 * without a deadline, nor one that would come before the approval exists.
 */
export function planNudges(now: number, deadline: ApprovalDeadline): Nudge[] {
  const end = deadline.timeoutMs === null ? Infinity : now + deadline.timeoutMs;
  const planned: { at: number; nudge: Nudge }[] = [];
  deadline.escalate.forEach((step, index) => {
    const at = now + step.afterMs;
    const nudge: Nudge = { at: iso(at), kind: 'escalate', step: index + 1, to: step.to };
    if (at < end) planned.push({ at, nudge });
  });
  if (deadline.remindBeforeMs !== null && end !== Infinity) {
    const at = end - deadline.remindBeforeMs;
    if (at > now) planned.push({ at, nudge: { at: iso(at), kind: 'remind' } });
  }
  return planned.sort((a, b) => a.at - b.at).map(({ nudge }) => nudge);
}

const iso = (ms: number) => new Date(ms).toISOString();
