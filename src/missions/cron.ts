import { Cron } from 'croner';

/**
 * Cron expressions with time zones, on croner (maintained, no dependencies): five fields
 * (minute precision) or six (seconds first). Day-of-month and day-of-week combine with OR,
 * as in Vixie cron. Fire times are instants; a local time skipped by a daylight-saving
 * change fires at the first valid time after it, a repeated one fires once.
 */
export interface CronSchedule {
  /** The first fire time strictly after `after`, or null if there is none. */
  next(after: Date): Date | null;
}

export function parseCron(expression: string, timezone: string): CronSchedule {
  if (!isTimeZone(timezone)) throw new Error(`unknown time zone "${timezone}"`);
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone, paused: true, mode: '5-or-6-parts' });
  } catch (error) {
    // croner's messages name the field ("Invalid value for minute: 61"), never more.
    throw new Error(`not a cron expression (${(error as Error).message.replace(/^\w+: /, '')})`);
  }
  return { next: (after) => cron.nextRun(after) };
}

export function isTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The fire times in (after, upTo], oldest first, at most `limit` (the newest ones are kept
 * when there are more: with catch_up the recent past matters most).
 */
export function fireTimesBetween(
  schedule: CronSchedule,
  after: Date,
  upTo: Date,
  limit: number,
): Date[] {
  const times: Date[] = [];
  for (let next = schedule.next(after); next !== null && next <= upTo; next = schedule.next(next)) {
    times.push(next);
    if (times.length > limit) times.shift();
  }
  return times;
}
