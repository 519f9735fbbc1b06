// Screenshots of the web app's main screens, light and dark, wide and phone, for the
// README (docs/screenshots/). Run with `npm run screenshots` after `npm run build`; it
// starts its own Parley on embedded storage in a temp folder and Debian's Chromium.
import { mkdirSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { ParleyClient } from '../src/client/index.js';
import { launchBrowser, phone, signedIn, wide } from '../test/support/browser.js';
import { startTestServer } from '../test/support/server.js';
import { ensurePgliteTemplate } from '../test/support/template.js';

const out = 'docs/screenshots';
mkdirSync(out, { recursive: true });
// The migrated database every test server copies (the test suite's global setup makes it).
await ensurePgliteTemplate();
const server = await startTestServer(
  {
    auth: {
      keys: [
        { key_env: 'K_ANN', tenant: 'acme', user: 'ann', roles: ['lead', 'admin'] },
        { key_env: 'K_RAJ', tenant: 'acme', user: 'raj', roles: [] },
      ],
    },
    agents: {
      default: {
        model: 'demo/echo',
        greeting: 'Hi! I can run the calculator for you, after someone approves it.',
        tools: { calculator: 'approve', clock: 'allow' },
      },
    },
    missions: {
      digest: {
        prompt: 'Summarize the week for {{team}}.',
        loop_prompt: '/decide continue:3',
        input_schema: {
          type: 'object',
          properties: {
            team: { type: 'string', description: 'Who the digest is for' },
            days: { type: 'integer', minimum: 1 },
            format: { enum: ['short', 'long'] },
            with_charts: { type: 'boolean' },
          },
          required: ['team'],
        },
      },
      watch: {
        prompt: 'Watch the queue.',
        loop_prompt: '/decide continue:9',
        loop_delay_seconds: 3600,
      },
    },
    schedules: {
      weekly: {
        mission: 'watch',
        cron: '0 9 * * 1',
        timezone: 'Europe/Paris',
        tenant: 'acme',
        user: 'ann',
      },
    },
  },
  { K_ANN: 'ann-key', K_RAJ: 'raj-key', PARLEY_DEMO_DELAY_MS: '0' },
);
const ann = new ParleyClient({ baseUrl: server.url, apiKey: 'ann-key' });
const raj = new ParleyClient({ baseUrl: server.url, apiKey: 'raj-key' });

async function settle(sessionId: string, state: string): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    if ((await ann.getSession(sessionId)).state === state) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const release = await ann.createSession({ title: 'Release notes for 0.2' });
await ann.admitTurn({
  sessionId: release.session_id,
  message:
    'Draft the **release notes**: durable turns, `attempt_reset`, and the new web app.\n\n```sh\nnpm start\n```',
});
await settle(release.session_id, 'idle');
await raj.admitTurn({
  sessionId: release.session_id,
  message: 'Add the approvals inbox too, please.',
});
await settle(release.session_id, 'idle');
await ann.admitTurn({
  sessionId: release.session_id,
  message: '/tool calculator {"expression": "1299 * 12"}',
});
await settle(release.session_id, 'input_required');
const budget = await raj.createSession({ title: 'Quarterly budget' });
await raj.admitTurn({
  sessionId: budget.session_id,
  message: '/tool calculator {"expression": "4 * 2500 + 800"}',
});
await settle(budget.session_id, 'input_required');
const options = await ann.createSession({ title: 'Pick a launch day' });
await ann.admitTurn({ sessionId: options.session_id, message: '/options Monday|Tuesday|Thursday' });
await settle(options.session_id, 'idle');

const orders = await ann.createSession({ title: 'Orders this week' });
await ann.admitTurn({ sessionId: orders.session_id, message: 'How are the orders doing?' });
await settle(orders.session_id, 'idle');
await ann.http.request('POST', '/api/v1/panels', {
  body: {
    title: 'Orders',
    scope: 'session',
    session_id: orders.session_id,
    document: {
      type: 'stack',
      children: [
        {
          type: 'stack',
          direction: 'horizontal',
          children: [
            {
              type: 'table',
              columns: ['order', 'state', 'items'],
              rows: [
                ['A17', 'shipped', 3],
                ['B02', 'packing', 1],
                ['C09', 'late', 4],
              ],
            },
            {
              type: 'chart',
              kind: 'bar',
              labels: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'],
              series: [{ name: 'orders', values: [12, 18, 9, 21, 15] }],
            },
          ],
        },
        { type: 'progress', label: 'Shipped this week', value: 61, max: 75 },
        {
          type: 'form',
          name: 'expedite',
          title: 'Expedite an order',
          fields: [
            { name: 'order', label: 'Order', required: true },
            { name: 'reason', label: 'Reason', kind: 'select', options: ['late', 'VIP'] },
          ],
        },
      ],
    },
  },
});

const missionsPath = (name: string) => `/api/v1/missions/${name}/executions`;
await ann.http.request('POST', missionsPath('digest'), {
  body: { execution_id: 'digest_1', input: { team: 'support' } },
});
await ann.http.request('POST', missionsPath('watch'), { body: { execution_id: 'watch_1' } });
for (let tries = 0; tries < 400; tries++) {
  const digest = await ann.http.request<{ status: string }>('GET', '/api/v1/executions/digest_1');
  if (digest.status === 'success') break;
  await new Promise((resolve) => setTimeout(resolve, 50));
}

const browser = await launchBrowser();
async function shoot(
  name: string,
  path: string,
  viewport: { width: number; height: number },
  colorScheme: 'light' | 'dark',
  ready: (page: Page) => Promise<void>,
): Promise<void> {
  const { context, page } = await signedIn(browser, 'ann-key', { viewport, colorScheme });
  await page.goto(`${server.url}${path}`);
  await ready(page);
  await page.screenshot({ path: `${out}/${name}-${colorScheme}.png` });
  await context.close();
}

for (const scheme of ['light', 'dark'] as const) {
  const approval = async (page: Page) => {
    await page.getByRole('region', { name: 'Approval needed: calculator' }).waitFor();
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
  };
  await shoot('conversation-wide', `/s/${release.session_id}`, wide, scheme, approval);
  await shoot('conversation-phone', `/s/${release.session_id}`, phone, scheme, approval);
  await shoot('inbox-wide', '/inbox', wide, scheme, async (page) => {
    await page
      .getByRole('region', { name: 'Approvals inbox' })
      .getByRole('button', { name: 'Approve' })
      .first()
      .waitFor();
  });
  await shoot('sessions-phone', '/', phone, scheme, async (page) => {
    await page.getByRole('link', { name: /Quarterly budget/ }).waitFor();
  });
  const desktop = async (page: Page) => {
    await page.getByRole('figure', { name: 'Usage per day' }).locator('svg').first().waitFor();
    await page
      .getByRole('article', { name: 'Execution digest_1' })
      .getByText('succeeded')
      .waitFor();
  };
  await shoot('desktop-wide', '/desktop', wide, scheme, desktop);
  await shoot('desktop-phone', '/desktop', phone, scheme, desktop);
  await shoot('panels-wide', `/s/${orders.session_id}`, wide, scheme, async (page) => {
    await page.getByRole('region', { name: 'Panel: Orders' }).locator('svg').first().waitFor();
  });
  await shoot('options-wide', `/s/${options.session_id}`, wide, scheme, async (page) => {
    await page.getByRole('group', { name: 'Options' }).waitFor();
  });
}
await browser.close();
await server.close();
console.log(`screenshots written to ${out}/`);
