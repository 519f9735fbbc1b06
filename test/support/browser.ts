import { createServer } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Debian's Chromium (`apt-get install chromium`), headless and kept off the network:
 * no QUIC, no background fetches, no component updates, no sync. Playwright gives each
 * launch a fresh temporary profile (user data dir), removed when the browser closes.
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.PARLEY_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
      // getUserMedia answers at once with a synthetic microphone (a beep), no prompt.
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
    ],
  });
}

export const wide = { width: 1280, height: 800 };
export const phone = { width: 390, height: 844 };

/** A browser context already signed in with `apiKey` (session storage, as the app keeps it). */
export async function signedIn(
  browser: Browser,
  apiKey: string | null,
  options: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    viewport: options.viewport ?? wide,
    colorScheme: options.colorScheme ?? 'light',
    reducedMotion: 'reduce',
  });
  if (apiKey !== null) {
    // Runs in the page: its globals are the browser's, not Node's.
    await context.addInitScript((key) => {
      const storage = (globalThis as any).sessionStorage;
      if (!storage.getItem('parley.apiKey')) storage.setItem('parley.apiKey', key);
    }, apiKey);
  }
  const page = await context.newPage();
  return { context, page };
}

/** A free loopback port (for a server that must come back on the same address). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A message long enough that "mid-reply" lasts: `count` numbered words. */
export function longMessage(prefix: string, count: number): string {
  return Array.from({ length: count }, (_, index) => `${prefix}${index}`).join(' ');
}
