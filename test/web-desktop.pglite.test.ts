import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, longMessage, phone, signedIn } from './support/browser.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// The operator's desktop (/desktop) in Chromium against a real Parley with missions, a
// schedule, memories and usage. One server and one browser for the file; every wait is for
// a state on the page or the server, never a fixed delay.
let server: TestServer;
let browser: Browser;
const alice = 'alice-key';
const bob = 'bob-key';
const asAlice = { authorization: `Bearer ${alice}` };

const api = (method: string, path: string, body?: unknown) =>
  request(server.url, method, path, body, asAlice);

beforeAll(async () => {
  server = await startTestServer(
    {
      runtime: { execution_recheck_ms: 300 },
      auth: {
        keys: [
          { key_env: 'K_ALICE', tenant: 'acme', user: 'alice', roles: ['admin'] },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
        ],
      },
      agents: {
        default: {
          model: 'demo/echo',
          tools: { remember: 'allow', clock: 'allow', calculator: 'approve' },
        },
      },
      missions: {
        // A first prompt of some length: the demo model writes one word every 40 ms, so
        // "running" lasts six seconds or more, four of the list's reads (every 1.5 s) even
        // on a loaded machine, and the page sees it.
        tidy: {
          prompt: `Tidy {{room}} ({{count}}, {{urgent}}, {{size}}, {{extra}}). ${longMessage('w', 150)}`,
          loop_prompt: '/decide continue:2',
          input_schema: {
            type: 'object',
            properties: {
              room: { type: 'string', description: 'Which room' },
              count: { type: 'integer', minimum: 1 },
              urgent: { type: 'boolean' },
              size: { enum: ['small', 'large'] },
              extra: { type: 'object' },
            },
            required: ['room'],
          },
        },
        stuck: { prompt: 'Look around.', loop_prompt: '/decide blocked' },
        wait: { prompt: 'Wait.', loop_prompt: '/decide continue:9', loop_delay_seconds: 3600 },
      },
      schedules: {
        nightly: {
          mission: 'wait',
          cron: '0 3 * * *',
          timezone: 'Europe/Paris',
          tenant: 'acme',
          user: 'alice',
        },
      },
    },
    { K_ALICE: alice, K_BOB: bob, PARLEY_DEMO_DELAY_MS: '40' },
  );
  browser = await launchBrowser();
  // Two memories of alice's (and the usage of the turn that made them).
  const session = await api('POST', '/api/v1/chat/sessions', { title: 'Memories' });
  await api('POST', '/api/v1/chat/turns', {
    turn_id: 'remember_1',
    session_id: session.body.session_id,
    message:
      '/tool remember {"text": "Alice prefers green tea"}\n/tool remember {"text": "Alice lives in Lyon"}',
  });
  await until(
    () => api('GET', '/api/v1/memories'),
    (answer) => answer.body.items?.length === 2,
    'the two memories',
  );
  // A turn of Bob's: usage of a second user.
  const asBob = { authorization: `Bearer ${bob}` };
  const bobs = await request(
    server.url,
    'POST',
    '/api/v1/chat/turns',
    { turn_id: 'bob_1', message: 'Hello from Bob' },
    asBob,
  );
  await until(
    () =>
      request(
        server.url,
        'GET',
        `/api/v1/chat/sessions/${bobs.body.session_id}/messages`,
        undefined,
        asBob,
      ),
    (answer) => answer.body.items?.some((item: { role: string }) => item.role === 'assistant'),
    "Bob's reply",
  );
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const execution = (page: Page, id: string) =>
  page.getByRole('article', { name: `Execution ${id}` });

async function openDesktop(page: Page): Promise<void> {
  await page.goto(`${server.url}/desktop`);
  await page.getByRole('heading', { name: 'Desktop', exact: true }).waitFor();
}

/**
 * Alice's desktop (wide, light), opened by the first case and shared by the cases after it:
 * it keeps itself fresh from the user stream, so a case needs no page load of its own.
 */
let shared: { context: BrowserContext; page: Page } | null = null;
async function alicesDesktop(): Promise<Page> {
  if (!shared) {
    shared = await signedIn(browser, alice);
    await openDesktop(shared.page);
  }
  return shared.page;
}

describe('the desktop', () => {
  it('is linked from the top bar and shows an execution’s status live as it changes', async () => {
    const { context, page } = await signedIn(browser, alice);
    await page.goto(server.url);
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Desktop' })
      .click();
    await page.waitForURL(/\/desktop$/);
    await page.getByRole('heading', { name: 'Executions' }).waitFor();

    const dispatched = await api('POST', '/api/v1/missions/tidy/executions', {
      execution_id: 'live_1',
      input: { room: 'the attic' },
    });
    expect(dispatched.status).toBe(202);
    const card = execution(page, 'live_1');
    await card.getByLabel('Status: running').waitFor();
    await card.getByRole('progressbar', { name: /Iteration \d of 10/ }).waitFor();
    // The same card changes in place to the end, with the decision and the result.
    await card.getByLabel('Status: succeeded').waitFor();
    await card.getByText('complete after iteration 2').waitFor();
    await card.getByRole('progressbar', { name: 'Iteration 2 of 10' }).waitFor();
    expect(await card.locator('.desk-result').textContent()).toContain(
      'Continue the mission. This is iteration 2 of 10.',
    );
    // The activity stream has its start and its end.
    const log = page.getByRole('log', { name: 'Activity stream' });
    await log.getByText('tidy started (live_1, for alice)').waitFor();
    await log.locator('li.activity-END').filter({ hasText: 'live_1' }).waitFor();
    expect(await log.locator('li.activity-EXE').filter({ hasText: 'live_1' }).count()).toBe(1);
    // The schedule, with its next fire time.
    const schedule = page.getByRole('listitem', { name: 'Schedule nightly' });
    await schedule.getByText('runs wait').waitFor();
    expect(await schedule.locator('time').first().getAttribute('datetime')).toMatch(
      /T0[12]:00:00\.000Z$/,
    );
    // The cases below go on on this page (alicesDesktop).
    shared = { context, page };
  });

  it('dispatches through the form generated from the input schema, and cancels', async () => {
    const page = await alicesDesktop();
    const missionPicker = page
      .getByRole('region', { name: 'Dispatch' })
      .getByRole('combobox', { name: 'Mission' });
    await missionPicker.selectOption('tidy');
    const form = page.getByRole('form', { name: 'Dispatch tidy' });
    await form.getByRole('textbox', { name: /room/ }).fill('the cellar');
    await form.getByRole('spinbutton', { name: 'count' }).fill('3');
    await form.getByRole('checkbox', { name: 'urgent' }).check();
    await form.getByRole('combobox', { name: 'size' }).selectOption('large');
    await form.getByRole('textbox', { name: 'extra' }).fill('{"note": "mind the stairs"}');
    await form.getByRole('button', { name: 'Dispatch' }).click();
    const status = form.getByRole('status').filter({ hasText: /Dispatched web_/ });
    await status.waitFor();
    const id = /Dispatched (web_\w+)\./.exec((await status.textContent()) ?? '')?.[1] as string;
    await execution(page, id).waitFor();
    // The input the form made reached the mission's prompt.
    const found = await api('GET', `/api/v1/executions/${id}`);
    const messages = await api(
      'GET',
      `/api/v1/chat/sessions/${found.body.session_id}/messages?limit=50`,
    );
    const first = messages.body.items.at(-1).content as string;
    expect(first).toContain('Tidy the cellar (3, true, large, {"note":"mind the stairs"}).');

    // Bad JSON in a JSON field is refused here; nothing is dispatched.
    await form.getByRole('textbox', { name: 'extra' }).fill('{nope');
    await form.getByRole('button', { name: 'Dispatch' }).click();
    await form.getByRole('alert').filter({ hasText: 'extra is not valid JSON' }).waitFor();

    // Cancel: a loop waiting for its next run ends cancelled.
    await missionPicker.selectOption('wait');
    await page
      .getByRole('form', { name: 'Dispatch wait' })
      .getByRole('button', { name: 'Dispatch' })
      .click();
    const waiting = page
      .getByRole('form', { name: 'Dispatch wait' })
      .getByRole('status')
      .filter({ hasText: /Dispatched web_/ });
    await waiting.waitFor();
    const waitId = /Dispatched (web_\w+)\./.exec(
      (await waiting.textContent()) ?? '',
    )?.[1] as string;
    const card = execution(page, waitId);
    await card.getByLabel('Status: waiting for its next run').waitFor();
    await card.getByText('Next run', { exact: true }).waitFor();
    await card.getByRole('button', { name: 'Cancel' }).click();
    await card.getByLabel('Status: cancelled').waitFor();
    await card.getByRole('button', { name: 'Cancel' }).waitFor({ state: 'detached' });
    expect((await api('GET', `/api/v1/executions/${waitId}`)).body.status).toBe('cancelled');
  });

  it('unblocks a blocked loop; the activity stream shows interruptions and approvals', async () => {
    const page = await alicesDesktop();
    await api('POST', '/api/v1/missions/stuck/executions', { execution_id: 'stuck_1' });
    const card = execution(page, 'stuck_1');
    await card.getByLabel('Status: blocked').waitFor();
    const log = page.getByRole('log', { name: 'Activity stream' });
    await log.locator('li.activity-INT').filter({ hasText: 'stuck is blocked' }).waitFor();
    await card.getByRole('textbox', { name: 'Note for the next iteration' }).fill('Look closer');
    await card.getByRole('button', { name: 'Unblock' }).click();
    await card.getByRole('status').filter({ hasText: 'Unblocked' }).waitFor();
    await until(
      () => api('GET', '/api/v1/executions/stuck_1'),
      (answer) => answer.body.iteration === 2 && answer.body.status === 'blocked',
      'the next iteration, blocked again',
    );
    await card.getByRole('progressbar', { name: 'Iteration 2 of 10' }).waitFor();
    // A second interruption is a second line; the first stays.
    await until(
      () => log.locator('li.activity-INT').filter({ hasText: 'stuck_1' }).count(),
      (count) => count === 2,
      'two INT lines',
    );
    await card.getByRole('button', { name: 'Cancel' }).click();
    await card.getByLabel('Status: cancelled').waitFor();
    await log.locator('li.activity-END').filter({ hasText: 'stuck cancelled' }).waitFor();

    // A pending approval is an APR line. It comes from the user stream's frame: answered as
    // soon as it is pending, before any listing could show it, it is still there.
    const session = await api('POST', '/api/v1/chat/sessions', { title: 'Budget' });
    const sessionId = session.body.session_id as string;
    await api('POST', '/api/v1/chat/turns', {
      turn_id: 'approve_1',
      session_id: sessionId,
      message: '/tool calculator {"expression": "2 + 2"}',
    });
    const inbox = await until(
      () => api('GET', '/api/v1/inputs?state=pending'),
      (answer) => answer.body.items?.some((item: any) => item.session_id === sessionId),
      'the approval to be pending',
    );
    const pending = inbox.body.items.find((item: any) => item.session_id === sessionId);
    const answered = await api(
      'POST',
      `/api/v1/chat/sessions/${sessionId}/inputs/${pending.request_id}`,
      { expected_sequence: pending.expected_sequence, approved: true },
    );
    expect(answered.status).toBe(200);
    await log
      .locator('li.activity-APR')
      .filter({ hasText: 'Approval needed: calculator in Budget' })
      .waitFor();
    expect(
      (await api('GET', '/api/v1/inputs?state=pending')).body.items.some(
        (item: any) => item.request_id === pending.request_id,
      ),
    ).toBe(false);
  });

  it('charts usage per day, agent, model and user with recharts', async () => {
    const { context, page } = await signedIn(browser, alice);
    // One report per grouping over the whole period (no report per day).
    const groupings = new Set<string>();
    page.on('request', (sent) => {
      const url = new URL(sent.url());
      if (url.pathname === '/api/v1/usage') groupings.add(url.searchParams.get('group_by') ?? '');
    });
    await openDesktop(page);
    const usage = page.getByRole('region', { name: 'Usage and cost' });
    await usage.getByText(/Over the period: .* tokens in/).waitFor();
    expect([...groupings].sort()).toEqual(['agent', 'day', 'model', 'user']);
    for (const name of ['Usage per day', 'Usage per agent', 'Usage per model', 'Usage per user']) {
      const chart = usage.getByRole('figure', { name });
      await chart.locator('svg.recharts-surface').first().waitFor();
      await chart.locator('.recharts-bar-rectangle').first().waitFor();
    }
    const perAgent = usage.getByRole('figure', { name: 'Usage per agent' });
    expect(
      await perAgent.locator('.recharts-cartesian-axis-tick-value').allTextContents(),
    ).toContain('default');
    // Per user: Alice's turns and executions, and Bob's turn, each as its author's.
    const perUser = usage.getByRole('figure', { name: 'Usage per user' });
    const users = await perUser.locator('.recharts-cartesian-axis-tick-value').allTextContents();
    expect(users).toEqual(expect.arrayContaining(['alice', 'bob']));
    const byUser = await api('GET', '/api/v1/usage?group_by=user');
    expect(byUser.body.items.map((item: { key: string }) => item.key).sort()).toEqual([
      'alice',
      'bob',
    ]);
    expect(byUser.body.items.find((item: { key: string }) => item.key === 'bob').calls).toBe(1);
    // (That Bob, no admin, is told so instead of a failing panel: the schedules case.)
    await context.close();
  });

  it('switches a schedule off and on again (admins only)', async () => {
    const page = await alicesDesktop();
    const schedule = page.getByRole('listitem', { name: 'Schedule nightly' });
    const toggle = schedule.getByRole('switch', { name: 'Enabled' });
    expect(await toggle.isChecked()).toBe(true);
    await toggle.click();
    const panel = page.getByRole('region', { name: 'Schedules' });
    await panel
      .getByRole('status')
      .filter({ hasText: 'nightly is off: it does not fire until it is switched on.' })
      .waitFor();
    await schedule.getByText('off', { exact: true }).waitFor();
    await schedule.getByText('none while off').waitFor();
    expect(await toggle.isChecked()).toBe(false);
    const off = await api('GET', '/api/v1/schedules');
    expect(off.body.items).toEqual([expect.objectContaining({ name: 'nightly', enabled: false })]);

    // Bob is no admin: he sees that it is off, and no switch; usage says so instead of failing.
    const other = await signedIn(browser, bob);
    await openDesktop(other.page);
    const his = other.page.getByRole('listitem', { name: 'Schedule nightly' });
    await his.getByText('off', { exact: true }).waitFor();
    expect(await his.getByRole('switch').count()).toBe(0);
    await other.page.getByText('Usage and cost need the admin role.').waitFor();
    await other.context.close();

    await toggle.click();
    await panel
      .getByRole('status')
      .filter({ hasText: 'nightly is on again: one execution makes up for the fire times' })
      .waitFor();
    await schedule.locator('time').first().waitFor();
    expect(await toggle.isChecked()).toBe(true);
    const on = await api('GET', '/api/v1/schedules');
    expect(on.body.items).toEqual([expect.objectContaining({ name: 'nightly', enabled: true })]);
  });

  it('searches memories and deletes one after a confirmation', async () => {
    const page = await alicesDesktop();
    const panel = page.getByRole('region', { name: 'Memories' });
    const found = panel.getByRole('list', { name: 'Memories found' }).getByRole('listitem');
    await found.filter({ hasText: 'Alice lives in Lyon' }).waitFor();
    await panel.getByRole('searchbox', { name: 'Search memories' }).fill('green');
    await until(
      () => found.count(),
      (count) => count === 1,
      'the search to leave one memory',
    );
    const tea = found.filter({ hasText: 'Alice prefers green tea' });
    await tea.getByRole('button', { name: 'Delete' }).click();
    await tea.getByRole('button', { name: 'Yes, delete' }).click();
    await panel.getByRole('status').filter({ hasText: 'Deleted the memory' }).waitFor();
    await tea.waitFor({ state: 'detached' });
    const left = await api('GET', '/api/v1/memories');
    expect(left.body.items.map((memory: { text: string }) => memory.text)).toEqual([
      'Alice lives in Lyon',
    ]);

    // A section collapses; the layout is saved in the preferences and comes back on reload.
    const toggle = page.getByRole('button', { name: 'Memories section' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('true');
    await toggle.click();
    await panel.getByRole('searchbox', { name: 'Search memories' }).waitFor({ state: 'hidden' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await until(
      () => api('GET', '/api/v1/me/preferences'),
      (answer) => JSON.stringify(answer.body.desktop) === '{"collapsed":["memories"]}',
      'the layout to be saved',
    );
    await page.reload();
    await page.getByRole('button', { name: 'Memories section', expanded: false }).waitFor();
    expect(await panel.getByRole('searchbox', { name: 'Search memories' }).isVisible()).toBe(false);
    // The others stay open.
    await page.getByRole('button', { name: 'Agents section', expanded: true }).waitFor();
    await page.getByRole('button', { name: 'Memories section' }).click();
    await panel.getByRole('searchbox', { name: 'Search memories' }).waitFor();
    await until(
      () => api('GET', '/api/v1/me/preferences'),
      (answer) => JSON.stringify(answer.body.desktop) === '{"collapsed":[]}',
      'the layout to be saved open',
    );
  });

  it("shows an agent's revisions, edits its definition with a diff, and restores the shipped one", async () => {
    const page = await alicesDesktop();
    const panel = page.getByRole('region', { name: 'Agents' });
    const row = panel.getByRole('listitem', { name: 'Agent default' });
    await row.getByText(/revision \d+/).waitFor();
    await row.getByRole('button', { name: 'Definition' }).click();
    const editor = panel.getByRole('region', { name: 'Definition of default' });
    const revisions = editor.getByRole('region', { name: 'Revisions' });
    // The revisions come from the server: the shipped one, current.
    const first = await revisions.getByText(/Revision \d+ \(current\) · shipped/).textContent();
    const before = Number(/Revision (\d+)/.exec(first ?? '')?.[1]);
    const listed = await api('GET', '/api/v1/agents/default/revisions');
    expect(listed.body.items.map((item: any) => item.revision)).toEqual([before]);

    const box = editor.getByRole('textbox', { name: 'Definition (JSON)' });
    const definition = JSON.parse(await box.inputValue());
    await box.fill(JSON.stringify({ ...definition, greeting: 'Hello from the desktop' }, null, 2));
    await editor
      .getByRole('figure', { name: 'Your changes' })
      .getByText('Hello from the desktop')
      .waitFor();
    await editor.getByRole('button', { name: 'Save' }).click();
    const saved = await editor
      .getByRole('status')
      .filter({ hasText: /Saved as revision \d+/ })
      .textContent();
    const edited = Number(/revision (\d+)/.exec(saved ?? '')?.[1]);
    expect(edited).toBeGreaterThan(before);
    await revisions.getByText(`Revision ${edited} (current) · edited`).waitFor();
    const shippedItem = revisions.getByRole('listitem', {
      name: `Revision ${before}`,
      exact: true,
    });
    await shippedItem.getByText(/shipped/).waitFor();
    // A past revision against the current one, and shown whole.
    await shippedItem.getByRole('button', { name: 'Compare with current' }).click();
    await editor
      .getByRole('figure', { name: `Revision ${before} → current` })
      .getByText('Hello from the desktop')
      .waitFor();
    await shippedItem.getByRole('button', { name: 'Show' }).click();
    const shownShipped = revisions.getByRole('figure', { name: `Revision ${before}`, exact: true });
    await shownShipped.getByText('"model": "demo/echo"').waitFor();
    expect(await shownShipped.textContent()).not.toContain('Hello from the desktop');
    // The current definition against the shipped one.
    await editor.getByRole('button', { name: 'Compare with shipped' }).click();
    await editor
      .getByRole('figure', { name: 'Shipped → current' })
      .getByText('Hello from the desktop')
      .waitFor();
    await row.getByText('customized').waitFor();
    const customized = await api('GET', '/api/v1/agents/default');
    expect(customized.body.definition.greeting).toBe('Hello from the desktop');

    // Restoring shows what goes first, and restores only once confirmed.
    await editor.getByRole('button', { name: 'Restore shipped…' }).click();
    const confirm = editor.getByRole('group', { name: 'Restore the shipped definition' });
    await confirm
      .getByRole('figure', { name: 'Restoring: from your definition to the shipped one' })
      .getByText('Hello from the desktop')
      .waitFor();
    expect((await api('GET', '/api/v1/agents/default')).body.is_customized).toBe(true);
    await confirm.getByRole('button', { name: 'Confirm restore' }).click();
    await editor
      .getByRole('status')
      .filter({ hasText: 'The shipped definition is restored.' })
      .waitFor();
    const restored = await api('GET', '/api/v1/agents/default');
    expect(restored.body.is_customized).toBe(false);
    // The restore is a revision of its own; the shipped revision is current again.
    await revisions.getByText(/Revision \d+ · restored to shipped/).waitFor();
    await revisions.getByText(`Revision ${before} (current) · shipped`).waitFor();
    const editedItem = revisions.getByRole('listitem', { name: `Revision ${edited}`, exact: true });
    await editedItem.getByRole('button', { name: 'Show' }).click();
    await revisions
      .getByRole('figure', { name: `Revision ${edited}`, exact: true })
      .getByText('Hello from the desktop')
      .waitFor();
  });

  it('fits a 390 px screen and reaches the dispatch button by keyboard', async () => {
    const { context, page } = await signedIn(browser, alice, {
      viewport: phone,
      colorScheme: 'dark',
    });
    await openDesktop(page);
    await page.getByRole('figure', { name: 'Usage per day' }).locator('svg').first().waitFor();
    await execution(page, 'live_1').waitFor();
    // What happened before the page opened: the activity lines read from the listings.
    await page
      .getByRole('log', { name: 'Activity stream' })
      .getByText('tidy started (live_1, for alice)')
      .waitFor();
    const widths = await page.evaluate(() => {
      const doc = (globalThis as any).document;
      const desk = doc.querySelector('.desktop');
      return {
        page: doc.documentElement.scrollWidth,
        viewport: (globalThis as any).innerWidth,
        desk: desk.scrollWidth,
        deskClient: desk.clientWidth,
      };
    });
    expect(widths.page).toBeLessThanOrEqual(widths.viewport);
    expect(widths.desk).toBeLessThanOrEqual(widths.deskClient);

    // Tab from the top of the page until the dispatch button has the focus; on the way,
    // Enter on the executions' collapse button folds that long section away.
    await page.locator('body').focus();
    let reached = false;
    let folded = false;
    for (let presses = 0; presses < 150 && !reached; presses++) {
      await page.keyboard.press('Tab');
      const focused = await page.evaluate(() => {
        const active = (globalThis as any).document.activeElement;
        return active?.tagName === 'BUTTON'
          ? (active.getAttribute('aria-label') ?? active.textContent)
          : null;
      });
      if (focused === 'Executions section' && !folded) {
        await page.keyboard.press('Enter');
        await page.getByRole('button', { name: 'Executions section', expanded: false }).waitFor();
        await execution(page, 'live_1').waitFor({ state: 'hidden' });
        folded = true;
      }
      reached = focused === 'Dispatch';
    }
    expect(folded).toBe(true);
    expect(reached).toBe(true);
    // Space unfolds it again (and the layout is saved open for the cases after this one).
    await page.getByRole('button', { name: 'Executions section' }).focus();
    await page.keyboard.press('Space');
    await execution(page, 'live_1').waitFor();
    await until(
      () => api('GET', '/api/v1/me/preferences'),
      (answer) => JSON.stringify(answer.body.desktop?.collapsed) === '[]',
      'the layout to be saved open',
    );
    await context.close();
  });

  it('lists, forks and rewinds a conversation’s checkpoints', async () => {
    const { context, page } = await signedIn(browser, alice);
    const live = await api('GET', '/api/v1/executions/live_1');
    await page.goto(`${server.url}/s/${live.body.session_id}`);
    await page.getByRole('button', { name: 'Checkpoints' }).click();
    const region = page.getByRole('region', { name: 'Checkpoints' });
    const items = region.getByRole('listitem');
    await items.first().waitFor();
    expect(await items.count()).toBeGreaterThanOrEqual(2);
    // The oldest is last; rewinding to it is journaled.
    await items.last().getByRole('button', { name: 'Rewind' }).click();
    await region.getByRole('status').filter({ hasText: 'Rewound' }).waitFor();
    await until(
      () => api('GET', `/api/v1/chat/sessions/${live.body.session_id}/checkpoints`),
      (answer) => answer.body.items.some((item: { rewound: boolean }) => item.rewound),
      'a checkpoint rewound away',
    );
    await items.first().getByRole('button', { name: 'Fork' }).click();
    await page.waitForURL((url) => !url.pathname.endsWith(live.body.session_id));
    const forked = page.url().split('/s/')[1] as string;
    const projection = await api('GET', `/api/v1/chat/sessions/${forked}`);
    expect(projection.status).toBe(200);
    await context.close();
  });
  it('filters by the active workspace, and shows its panels as they change', async () => {
    const ops = await api('POST', '/api/v1/workspaces', { name: 'Ops' });
    expect(ops.status).toBe(201);
    const workspaceId = ops.body.workspace_id as string;
    for (const [id, inWorkspace] of [
      ['ws_in_1', true],
      ['ws_out_1', false],
    ] as const) {
      const dispatched = await api('POST', '/api/v1/missions/stuck/executions', {
        execution_id: id,
        ...(inWorkspace ? { workspace_id: workspaceId } : {}),
      });
      expect(dispatched.status).toBe(202);
    }
    const made = await api('POST', '/api/v1/panels', {
      title: 'Ops board',
      scope: 'workspace',
      workspace_id: workspaceId,
      document: { type: 'markdown', text: 'All quiet' },
    });
    expect(made.status).toBe(201);

    // The workspace picker lists the workspaces there were when the page opened.
    const page = await alicesDesktop();
    await openDesktop(page);
    await execution(page, 'ws_out_1').waitFor();
    await page.getByLabel('Workspace').selectOption({ label: 'Ops' });
    await execution(page, 'ws_in_1').waitFor();
    await execution(page, 'ws_out_1').waitFor({ state: 'detached' });
    const board = page.getByRole('region', { name: 'Panel: Ops board' });
    await board.getByText('All quiet').waitFor();
    const saved = await api('GET', '/api/v1/me/preferences');
    expect(saved.body.workspace_id).toBe(workspaceId);
    // A change to the panel reaches the open page through the user stream.
    const changed = await api('PUT', `/api/v1/panels/${made.body.id}`, {
      title: 'Ops board',
      document: { type: 'markdown', text: 'Paged: disk full' },
    });
    expect(changed.status).toBe(200);
    await board.getByText('Paged: disk full').waitFor();
    // A deleted one goes from the open page (the stream's panel_removed).
    expect((await api('DELETE', `/api/v1/panels/${made.body.id}`)).status).toBe(204);
    await board.waitFor({ state: 'detached' });
    // Back to all: both executions again.
    await page.getByLabel('Workspace').selectOption({ label: 'All' });
    await execution(page, 'ws_out_1').waitFor();
  });
});
