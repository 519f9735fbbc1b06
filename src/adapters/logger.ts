import type { Logger as ChatLogger } from 'chat';
import type { Logger } from '../log.js';

/**
 * The Chat SDK's logger, onto Parley's. The SDK passes objects with message text, request
 * details and errors that may quote a platform's response: only the message string and,
 * for failures, an error's own message go out. Debug and info are dropped (the SDK logs
 * every webhook at info); Parley logs what it does itself.
 */
export function chatLogger(log: Logger, prefix = 'chat-sdk'): ChatLogger {
  const describe = (args: unknown[]) => {
    for (const arg of args) {
      const error = (arg as { error?: unknown } | null)?.error ?? arg;
      if (error instanceof Error) return { err: error.message.slice(0, 300) };
    }
    return {};
  };
  return {
    child: (name: string) => chatLogger(log, `${prefix}:${name}`),
    debug: () => {},
    info: () => {},
    warn: (message: string, ...args: unknown[]) =>
      log.warn({ component: prefix, ...describe(args) }, message),
    error: (message: string, ...args: unknown[]) =>
      log.error({ component: prefix, ...describe(args) }, message),
  };
}
