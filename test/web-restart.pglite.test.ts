import { copyPgliteTemplate } from './support/template.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, launchBrowser, longMessage, signedIn } from './support/browser.js';
import { startParley, stopAllProcesses, type ParleyProcess } from './support/processes.js';

// The server dies mid-reply (SIGKILL) and comes back on the same address and data: the
// page shows that it lost the connection, reconnects by itself, and ends with the reply
// exactly once (the new worker's attempt_reset replaces the partial text).
let browser: Browser;
const dataDir = mkdtempSync(join(tmpdir(), 'parley-web-restart-'));
copyPgliteTemplate(dataDir);

beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await stopAllProcesses();
  rmSync(dataDir, { recursive: true, force: true });
});

async function serve(port: number): Promise<ParleyProcess> {
  return startParley('serve', {
    dataDir,
    env: {
      PARLEY_PORT: String(port),
      PARLEY_DEMO_DELAY_MS: '60',
      PARLEY_LEASE_TTL_MS: '3000',
      PARLEY_HEARTBEAT_MS: '1000',
    },
  });
}

describe('the web app across a server crash', () => {
  it('recovers after the server is killed mid-reply and restarted', async () => {
    const port = await freePort();
    let server = await serve(port);
    const { context, page } = await signedIn(browser, null);
    await page.goto(`${server.url as string}/new`);
    await page.getByRole('textbox', { name: 'Title', exact: true }).fill('Crash');
    await page.getByRole('button', { name: 'Start conversation' }).click();
    await page.waitForURL(/\/s\//);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    const words = longMessage('k', 70);
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill(words);
    await box.press('Enter');
    const replies = page.getByRole('article', { name: 'Reply from default' });
    await replies.filter({ hasText: 'k5' }).waitFor();

    server.kill('SIGKILL');
    await server.exited;
    await page
      .getByRole('status', { name: /Connection: (Reconnecting|Connecting|Offline)/ })
      .waitFor();

    server = await serve(port);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor({ timeout: 45_000 });
    await replies.filter({ hasText: 'k69' }).waitFor({ timeout: 45_000 });
    expect(await replies.count()).toBe(1);
    expect(await replies.locator('.markdown').textContent()).toBe(`You said: ${words}`);
    expect(await page.getByRole('article', { name: 'Message from You' }).count()).toBe(1);
    await context.close();
    server.kill('SIGTERM');
    await server.exited;
  });
});
