import { validateArguments } from './validate.js';
import { ToolError, type Tool } from './types.js';

export interface ClockResult {
  /** The instant, ISO 8601 in UTC. */
  now: string;
  /** The IANA zone `local` is expressed in, as requested (default UTC). */
  timezone: string;
  /** The same instant as local date-time with offset, e.g. 2024-03-10T19:35:09+05:30. */
  local: string;
}

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  try {
    return new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    });
  } catch {
    throw new ToolError('invalid_arguments', 'timezone must be an IANA time zone name');
  }
}

/** Local date-time with a numeric offset, built from parts so it never depends on locale. */
function formatLocal(date: Date, timeZone: string): string {
  const parts: Record<string, string> = {};
  for (const part of formatterFor(timeZone).formatToParts(date)) parts[part.type] = part.value;
  const offset = (parts.timeZoneName ?? 'GMT').replace('GMT', '') || '+00:00';
  const { year, month, day, hour, minute, second } = parts;
  return `${year}-${month}-${day}T${hour}:${minute}:${second}${offset}`;
}

/** The `clock` tool; `now` is injected so tests are deterministic. */
export function createClock(now: () => Date = () => new Date()): Tool {
  const tool: Tool = {
    name: 'clock',
    description:
      'Returns the current date and time: ISO 8601 in UTC, and local time in an optional ' +
      'IANA time zone (default UTC).',
    inputSchema: {
      type: 'object',
      properties: {
        timezone: { type: 'string', maxLength: 64, description: 'IANA zone, e.g. Europe/Paris' },
      },
      required: [],
      additionalProperties: false,
    },
    async execute(args: unknown): Promise<ClockResult> {
      const invalid = validateArguments(tool, args);
      if (invalid) throw invalid;
      const timezone = (args as { timezone?: string }).timezone ?? 'UTC';
      const date = now();
      return { now: date.toISOString(), timezone, local: formatLocal(date, timezone) };
    },
  };
  return tool;
}
