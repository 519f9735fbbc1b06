import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * One JSON logger for every process. Bodies, headers and provider payloads are never
 * logged; the redact list is a second line of defence for fields that might carry a
 * secret if someone logs an object carelessly.
 */
export function createLogger(
  options: { level?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  return pino(
    {
      level: options.level ?? process.env.PARLEY_LOG_LEVEL ?? 'info',
      base: { pid: process.pid },
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'headers.authorization',
          'req.headers.authorization',
          'apiKey',
          '*.apiKey',
          'api_key',
          '*.api_key',
          'key',
          '*.key',
          'body',
          '*.body',
        ],
        censor: '[redacted]',
      },
    },
    (options.destination ?? process.stdout) as pino.DestinationStream,
  );
}
