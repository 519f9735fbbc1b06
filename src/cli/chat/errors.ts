import { ParleyClientError } from '../../client/index.js';

/** One line for the person at the keyboard; a network error names the server it tried. */
export function describeError(error: unknown, url: string): string {
  if (error instanceof ParleyClientError) {
    if (error.code === 'network_error') {
      return `cannot reach a Parley server at ${url} (is it running? use --url)`;
    }
    return `${error.code}: ${error.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}
