import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { preview, type PreviewServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, launchBrowser, longMessage, signedIn } from './support/browser.js';
import { until } from './support/poll.js';
import { startTestServer, type TestServer } from './support/server.js';

// The examples/use-chat app (AI SDK's useChat + parley/ai-sdk) in a real browser, served
// by Vite's preview server with /api proxied to a real Parley: send, reload mid-reply and
// see the reply resume, stop a resumed reply, answer an approval.
let server: TestServer;
let site: PreviewServer;
let siteUrl: string;
let browser: Browser;
const root = fileURLToPath(new URL('..', import.meta.url));

beforeAll(async () => {
  execFileSync('node', ['scripts/build-web.mjs', 'example'], { cwd: root, stdio: 'inherit' });
  server = await startTestServer(
    { agents: { default: { model: 'demo/echo', tools: { calculator: 'approve' } } } },
    { PARLEY_DEMO_DELAY_MS: '40' },
  );
  const port = await freePort();
  site = await preview({
    configFile: fileURLToPath(new URL('../examples/use-chat/vite.config.ts', import.meta.url)),
    logLevel: 'silent',
    preview: {
      host: '127.0.0.1',
      port,
      strictPort: true,
      proxy: { '/api': { target: server.url, changeOrigin: false } },
    },
  });
  siteUrl = `http://127.0.0.1:${port}`;
  browser = await launchBrowser();
  // The example's build (skipped when it is up to date) can take a while on a busy machine.
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => site?.httpServer.close(() => resolve()) ?? resolve());
  await server?.close();
});

const assistant = (page: Page) => page.getByRole('listitem', { name: 'assistant message' });

async function open(page: Page): Promise<string> {
  await page.goto(siteUrl);
  await page.waitForURL(/\?session=/);
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  return new URL(page.url()).searchParams.get('session') as string;
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

async function journalTypes(sessionId: string): Promise<string[]> {
  const rows = await server.db.query<{ type: string }>(
    'select type from events where session_id = $1 order by sequence',
    [sessionId],
  );
  return rows.rows.map((row) => row.type);
}

describe('examples/use-chat', () => {
  it('streams a reply, and after a reload mid-reply resumes it without showing anything twice', async () => {
    const { context, page } = await signedIn(browser, null);
    await open(page);
    const words = longMessage('u', 80);
    await send(page, words);
    await assistant(page).filter({ hasText: 'u4' }).waitFor();
    expect(await assistant(page).first().textContent()).not.toContain('u79');
    await page.reload();
    await assistant(page).filter({ hasText: 'u79' }).waitFor();
    expect(await assistant(page).count()).toBe(1);
    expect(await assistant(page).textContent()).toBe(`Assistant: You said: ${words}`);
    expect(await page.getByRole('listitem', { name: 'user message' }).count()).toBe(1);
    await page.getByText('status: ready').waitFor();
    await context.close();
  });

  it('stops a resumed reply on the server, not just in the page', async () => {
    const { context, page } = await signedIn(browser, null);
    const sessionId = await open(page);
    await send(page, longMessage('s', 300));
    await assistant(page).filter({ hasText: 's3' }).waitFor();
    await page.reload();
    await page.getByText('status: streaming').waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    const types = await until(
      () => journalTypes(sessionId),
      (list) => list.includes('cancelled') || list.includes('done'),
      'the turn to end',
    );
    expect(types).toContain('cancelled');
    expect(types).not.toContain('done');
    await context.close();
  });

  it('answers an approval with addToolApprovalResponse', async () => {
    const { context, page } = await signedIn(browser, null);
    await open(page);
    await send(page, '/tool calculator {"expression": "6*7"}');
    const tool = page.getByLabel('tool calculator');
    await tool.getByRole('button', { name: 'Approve' }).click();
    await tool.getByText('42').waitFor();
    await assistant(page).filter({ hasText: 'Tool calculator returned' }).waitFor();
    await context.close();
  });
});
