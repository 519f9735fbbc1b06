import { z } from 'zod';
import { parseHostRule, type HostRule } from '../tools/httpFetch/hosts.js';
import { ConfigError } from './errors.js';
import { durationMs } from './schemaUnits.js';

/** The `a2a:` section (docs/configuration.md, "A2A"): the operator's alone. */
export const a2aSchema = z
  .object({
    // A2A push notifications: task updates POSTed to a URL the A2A client gives. Only to
    // these hosts (http_fetch's allow_hosts syntax); none: push notifications are off.
    push_notifications: z
      .object({
        allow_hosts: z.array(z.string()).default([]),
        allow_private: z.boolean().default(false),
        timeout_ms: durationMs.default(5000),
        max_attempts: z.number().int().positive().max(100).default(8),
        retry_base_ms: durationMs.default(1000),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .prefault({});

/** A2A push notifications (docs/protocols.md, "A2A"): off while `allowHosts` is empty. */
export interface A2aConfig {
  pushNotifications: {
    allowHosts: HostRule[];
    allowPrivate: boolean;
    timeoutMs: number;
    maxAttempts: number;
    retryBaseMs: number;
  };
}

export function compileA2a(section: z.output<typeof a2aSchema>): A2aConfig {
  const push = section.push_notifications;
  return {
    pushNotifications: {
      allowHosts: compileHostRules(push.allow_hosts, 'a2a.push_notifications.allow_hosts'),
      allowPrivate: push.allow_private,
      timeoutMs: push.timeout_ms,
      maxAttempts: push.max_attempts,
      retryBaseMs: push.retry_base_ms,
    },
  };
}

/** A list of hosts Parley may call out to (http_fetch's syntax), each checked. */
export function compileHostRules(entries: readonly string[], key: string): HostRule[] {
  return entries.map((entry, index) => {
    const rule = parseHostRule(entry);
    if (!rule) throw new ConfigError(`${key}.${index}: not a host name, *.domain or host:port`);
    return rule;
  });
}
