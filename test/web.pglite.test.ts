import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, longMessage, phone, signedIn } from './support/browser.js';
import { until } from './support/poll.js';
import { startTestServer, type TestServer } from './support/server.js';

// The web app in a real browser (Debian's Chromium) against a real Parley: the demo model
// writes one word every 40 ms, so "mid-reply" is a real state to wait for. Every wait is
// for a state on the page (Playwright's auto-waiting locators), never a fixed sleep.
let server: TestServer;
let browser: Browser;
const alice = 'alice-key';
const bob = 'bob-key';

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: {
        keys: [
          // alice also holds the operator's key: she prunes the journal below.
          {
            key_env: 'K_ALICE',
            tenant: 'acme',
            user: 'alice',
            roles: ['lead', 'admin'],
            operator: true,
          },
          { key_env: 'K_BOB', tenant: 'acme', user: 'bob', roles: [] },
        ],
      },
      agents: {
        default: {
          model: 'demo/echo',
          tools: { calculator: 'approve', clock: 'allow', ask_user: 'allow', show_panel: 'allow' },
        },
        // A second agent to choose in the picker (the `active_agent` preference).
        helper: { model: 'demo/echo' },
      },
    },
    { K_ALICE: alice, K_BOB: bob, PARLEY_DEMO_DELAY_MS: '40' },
  );
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/**
 * Alice's app (wide, light), shared by the cases that only start conversations of their
 * own in it: each moves within the app (New chat), as a person would, with no page load.
 */
let shared: Page | null = null;
async function alicesPage(): Promise<Page> {
  shared ??= (await signedIn(browser, alice)).page;
  return shared;
}

/** Starts a conversation from the New chat page and sends `message` from the composer. */
async function startConversation(page: Page, title: string, message: string): Promise<string> {
  // In a page the app already runs in, its New chat link; else the page's address.
  if (page.url().startsWith(server.url)) {
    await page.getByRole('link', { name: 'New chat' }).click();
  } else {
    await page.goto(`${server.url}/new`);
  }
  await page.getByRole('heading', { name: 'New conversation' }).waitFor();
  await page.getByRole('textbox', { name: 'Title', exact: true }).fill(title);
  await page.getByRole('button', { name: 'Start conversation' }).click();
  await page.waitForURL(/\/s\/[A-Za-z0-9]+$/);
  await send(page, message);
  return page.url().split('/s/')[1] as string;
}

async function send(page: Page, message: string): Promise<void> {
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill(message);
  await box.press('Enter');
}

const replies = (page: Page) => page.getByRole('article', { name: 'Reply from default' });

/** The saved preferences of the user of `key`. */
async function preferencesOf(key: string): Promise<Record<string, unknown>> {
  const answer = await fetch(`${server.url}/api/v1/me/preferences`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return (await answer.json()) as Record<string, unknown>;
}

describe('the web app', () => {
  it('signs in with an API key kept in session storage, never in the URL', async () => {
    const { page } = await signedIn(browser, null);
    await page.goto(server.url);
    await page.getByLabel('API key').fill('wrong-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'not valid' }).waitFor();
    await page.getByLabel('API key').fill(alice);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Conversations' }).waitFor();
    expect(await page.locator('.whoami').textContent()).toBe('alice');
    expect(page.url()).not.toContain(alice);
    expect(
      await page.evaluate(() => (globalThis as any).sessionStorage.getItem('parley.apiKey')),
    ).toBe(alice);
    await page.reload();
    await page.getByRole('navigation', { name: 'Conversations' }).waitFor();
    // Signed in: the cases that share Alice's app go on in this page.
    shared = page;
  });

  it('is served as a production build, from the API process', async () => {
    const index = await fetch(`${server.url}/`);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(await index.text())?.[1];
    expect(script).toBeDefined();
    const bundle = await (await fetch(`${server.url}${script}`)).text();
    expect(bundle).not.toContain('jsxDEV');
  });

  it('sends a message and streams the reply as it is written, then shows usage', async () => {
    const page = await alicesPage();
    const words = longMessage('w', 40);
    await startConversation(page, 'Streaming', words);
    await page
      .getByRole('article', { name: 'Your message' })
      .or(page.getByRole('article', { name: 'Message from You' }))
      .first()
      .waitFor();
    // Mid-reply: some words are there, the last one is not yet.
    await replies(page).filter({ hasText: 'w3' }).waitFor();
    expect(await replies(page).first().textContent()).not.toContain('w39');
    await page.getByRole('button', { name: 'Stop' }).waitFor();
    await page.getByRole('status', { name: 'default is writing' }).waitFor();
    await replies(page).filter({ hasText: 'w39' }).waitFor();
    expect(await replies(page).count()).toBe(1);
    expect(await replies(page).locator('.markdown').textContent()).toBe(`You said: ${words}`);
    await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached' });

    await replies(page).getByText('Usage').click();
    await replies(page)
      .getByText(/tokens out/)
      .waitFor();
    await page.getByRole('button', { name: 'Usage' }).click();
    await page
      .getByRole('region', { name: 'Session usage' })
      .getByText(/tokens in/)
      .waitFor();
    // The session list shows it, with its state.
    await page.getByRole('link', { name: /Streaming, idle/ }).waitFor();
  });

  it('starts a conversation from the first page with its first message, titled by it', async () => {
    const { context, page } = await signedIn(browser, bob);
    await page.goto(server.url);
    await page.getByRole('heading', { name: 'Start a conversation' }).waitFor();
    // The agent picker starts at the agent saved last (`active_agent`); choosing one saves it.
    const picker = page.getByRole('combobox', { name: 'Agent' });
    await until(
      () => picker.inputValue(),
      (agent) => agent === 'default',
      'the default agent',
    );
    await picker.selectOption('helper');
    await until(
      () => preferencesOf(bob),
      (saved) => saved.active_agent === 'helper',
      'the chosen agent to be saved',
    );
    await page.reload();
    await until(
      () => picker.inputValue(),
      (agent) => agent === 'helper',
      'the saved agent',
    );
    await picker.selectOption('default');
    await until(
      () => preferencesOf(bob),
      (saved) => saved.active_agent === 'default',
      'the default agent to be saved',
    );
    const box = page.getByRole('textbox', { name: 'First message' });
    await box.fill('Where is order A17?');
    await box.press('Enter');
    await page.waitForURL(/\/s\/[A-Za-z0-9]+$/);
    const sessionId = page.url().split('/s/')[1] as string;
    await replies(page).filter({ hasText: 'You said: Where is order A17?' }).waitFor();
    await page.getByRole('link', { name: /Where is order A17\?/ }).waitFor();
    // Opening it made it the active conversation: the first page offers to continue it,
    // and keeps its message box.
    await until(
      () => preferencesOf(bob),
      (saved) => saved.active_session_id === sessionId,
      'the active conversation to be saved',
    );
    await page.getByRole('link', { name: 'Parley' }).click();
    const resume = page.getByRole('link', { name: 'Continue Where is order A17?' });
    await resume.waitFor();
    await page.getByRole('textbox', { name: 'First message' }).waitFor();
    await resume.click();
    await page.waitForURL(`${server.url}/s/${sessionId}`);
    await replies(page).filter({ hasText: 'You said: Where is order A17?' }).waitFor();
    await context.close();
  });

  it("saves the user's language and time zone in Settings; they stay after a reload", async () => {
    const { context, page } = await signedIn(browser, bob);
    await page.goto(server.url);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Settings' }).waitFor();
    await page.getByRole('textbox', { name: 'Language' }).fill('de-ch');
    await page.getByRole('combobox', { name: 'Time zone' }).selectOption('Asia/Tokyo');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    // Stored canonical, and shown so.
    expect(await page.getByRole('textbox', { name: 'Language' }).inputValue()).toBe('de-CH');
    await page.reload();
    await page.getByRole('heading', { name: 'Settings' }).waitFor();
    await until(
      () => page.getByRole('combobox', { name: 'Time zone' }).inputValue(),
      (zone) => zone === 'Asia/Tokyo',
      'the saved time zone',
    );
    expect(await page.getByRole('textbox', { name: 'Language' }).inputValue()).toBe('de-CH');
    const stored = await fetch(`${server.url}/api/v1/me/preferences`, {
      headers: { authorization: `Bearer ${bob}` },
    });
    expect(await stored.json()).toMatchObject({ language: 'de-CH', timezone: 'Asia/Tokyo' });
    await context.close();
  });

  it('approves a tool in place: the outcome and the result appear in the thread', async () => {
    const page = await alicesPage();
    await startConversation(page, 'Approve', '/tool calculator {"expression": "6*7"}');
    const card = page.getByRole('region', { name: 'Approval needed: calculator' });
    await card.getByText('"expression": "6*7"').waitFor();
    await card.getByText('May answer: anyone in this conversation').waitFor();
    await card.getByRole('button', { name: 'Approve' }).click();
    await card.getByText('Approved by alice').waitFor();
    await page.getByRole('region', { name: 'Tool calculator' }).getByText('42').first().waitFor();
    await replies(page).filter({ hasText: 'Tool calculator returned' }).waitFor();
  });

  it('rejects a tool with a reason: the rejection is the tool result', async () => {
    const page = await alicesPage();
    await startConversation(page, 'Reject', '/tool calculator {"expression": "1/0"}');
    const card = page.getByRole('region', { name: 'Approval needed: calculator' });
    await card.getByRole('button', { name: 'Reject' }).click();
    await card.getByLabel('Reason for rejecting').fill('not with my numbers');
    await card.getByRole('button', { name: 'Confirm rejection' }).click();
    await card.getByText('Rejected by alice').waitFor();
    await page
      .getByRole('region', { name: 'Tool calculator' })
      .getByText(/not with my numbers/)
      .waitFor();
  });

  it('answers from the inbox while the conversation is open elsewhere: both update', async () => {
    const asker = { page: await alicesPage() };
    await startConversation(asker.page, 'Inbox case', '/tool calculator {"expression": "2+3"}');
    const card = asker.page.getByRole('region', { name: 'Approval needed: calculator' });
    await card.getByRole('button', { name: 'Approve' }).waitFor();

    const reviewer = await signedIn(browser, bob);
    await reviewer.page.goto(`${server.url}/inbox`);
    const inbox = reviewer.page.getByRole('region', { name: 'Approvals inbox' });
    const item = inbox
      .getByRole('region', { name: 'Approval needed: calculator' })
      .filter({ hasText: 'Inbox case' });
    await item.getByText('"expression": "2+3"').waitFor();
    await item.getByRole('button', { name: 'Approve' }).click();
    await item.waitFor({ state: 'detached' });

    await card.getByText('Approved by bob').waitFor();
    await asker.page
      .getByRole('region', { name: 'Tool calculator' })
      .getByText('5')
      .first()
      .waitFor();
    await replies(asker.page).filter({ hasText: 'Tool calculator returned' }).waitFor();
    await reviewer.context.close();
  });

  it('keeps the inbox and the list live from the user stream, without polling', async () => {
    const reviewer = await signedIn(browser, bob);
    await reviewer.page.goto(`${server.url}/inbox`);
    const inbox = reviewer.page.getByRole('region', { name: 'Approvals inbox' });
    await inbox.waitFor();
    await reviewer.page.getByRole('status', { name: 'Updates: live' }).waitFor();
    const asked: string[] = [];
    reviewer.page.on('request', (sent) => {
      const path = new URL(sent.url()).pathname;
      if (path === '/api/v1/inputs' || path === '/api/v1/chat/sessions') asked.push(path);
    });
    // Absence over time is the claim: while nothing changes, nothing is asked for, for
    // longer than the slowest poll the app would make without the stream (4 s).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    asked.length = 0;
    await new Promise((resolve) => setTimeout(resolve, 4500));
    expect(asked).toEqual([]);
    // Someone else asks for an approval: it appears here without a reload.
    const admitted = await fetch(`${server.url}/api/v1/chat/turns`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        turn_id: 'live-inbox-1',
        message: '/tool calculator {"expression": "7*6"}',
      }),
    });
    expect(admitted.status).toBe(202);
    await inbox
      .getByRole('region', { name: 'Approval needed: calculator' })
      .getByText('"expression": "7*6"')
      .first()
      .waitFor();
    expect(asked).toContain('/api/v1/inputs');
    await reviewer.context.close();
  });

  it('drops a request from the inbox when it is answered in the conversation', async () => {
    const asker = { page: await alicesPage() };
    await startConversation(
      asker.page,
      'Answered elsewhere',
      '/tool calculator {"expression": "9-1"}',
    );
    const reviewer = await signedIn(browser, bob);
    await reviewer.page.goto(`${server.url}/inbox`);
    const item = reviewer.page
      .getByRole('region', { name: 'Approval needed: calculator' })
      .filter({ hasText: 'Answered elsewhere' });
    await item.waitFor();
    await asker.page
      .getByRole('region', { name: 'Approval needed: calculator' })
      .getByRole('button', { name: 'Approve' })
      .click();
    await item.waitFor({ state: 'detached' });
    await reviewer.context.close();
  });

  it('answers a question the agent asks, in its own card', async () => {
    const page = await alicesPage();
    await startConversation(page, 'Question', '/tool ask_user {"question": "Which colour?"}');
    const card = page.getByRole('region', { name: 'The agent asks' });
    await card.getByText('Which colour?').waitFor();
    await card.getByLabel('Your answer').fill('teal');
    await card.getByRole('button', { name: 'Send answer' }).click();
    await card.getByText('Answered by alice').waitFor();
    await replies(page).filter({ hasText: 'teal' }).waitFor();
  });

  it('explains a failed turn in plain words', async () => {
    const page = await alicesPage();
    await startConversation(page, 'Failure', '/fail permanent');
    await page.getByRole('note').filter({ hasText: 'The model refused this request' }).waitFor();
    await page.getByRole('note').filter({ hasText: 'credentials' }).waitFor();
  });

  it('presses an option: the offer locks, and the choice is sent', async () => {
    const page = await alicesPage();
    await startConversation(page, 'Options', '/options red|green|blue');
    const options = page.getByRole('group', { name: 'Options' });
    await options.getByRole('button', { name: 'green' }).click();
    await options.getByRole('button', { name: 'green', pressed: true }).waitFor();
    for (const name of ['red', 'green', 'blue']) {
      expect(await options.getByRole('button', { name }).isDisabled()).toBe(true);
    }
    await page.getByText('Chose “green”').waitFor();
    await replies(page).nth(1).waitFor();
  });

  it('cancels the running turn with Esc', async () => {
    const page = await alicesPage();
    const words = longMessage('c', 300);
    await startConversation(page, 'Cancel', words);
    await replies(page).filter({ hasText: 'c3' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('note').filter({ hasText: 'Stopped by you' }).waitFor();
    expect(await replies(page).first().textContent()).not.toContain('c299');
    await page.getByRole('link', { name: /Cancel, idle/ }).waitFor();
  });

  it('reloads mid-reply and shows the continuation without duplicates', async () => {
    const { context, page } = await signedIn(browser, alice);
    const words = longMessage('r', 50);
    await startConversation(page, 'Reload', words);
    await replies(page).filter({ hasText: 'r4' }).waitFor();
    expect(await replies(page).first().textContent()).not.toContain('r49');
    await page.reload();
    await replies(page).filter({ hasText: 'r49' }).waitFor();
    expect(await replies(page).count()).toBe(1);
    expect(await replies(page).locator('.markdown').textContent()).toBe(`You said: ${words}`);
    expect(await page.getByRole('article', { name: 'Message from You' }).count()).toBe(1);
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();

    // Close the tab mid-reply and open the conversation again in a new one.
    const more = longMessage('z', 40);
    await send(page, more);
    await replies(page).filter({ hasText: 'z4' }).waitFor();
    const address = page.url();
    await page.close();
    const reopened = await context.newPage();
    await reopened.goto(address);
    await replies(reopened).filter({ hasText: 'z39' }).waitFor();
    expect(await replies(reopened).count()).toBe(2);
    expect(await replies(reopened).nth(1).locator('.markdown').textContent()).toBe(
      `You said: ${more}`,
    );
    await context.close();
  });

  it('resyncs from the transcript when the journal it needs was pruned', async () => {
    const page = await alicesPage();
    await startConversation(page, 'Pruned', 'before the prune');
    await replies(page).filter({ hasText: 'You said: before the prune' }).waitFor();
    const pruned = await fetch(`${server.url}/api/v1/admin/prune`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ older_than_seconds: 0 }),
    });
    expect(pruned.status).toBe(200);
    await page.reload();
    await replies(page).filter({ hasText: 'You said: before the prune' }).waitFor();
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    await send(page, 'after the prune');
    await replies(page).filter({ hasText: 'You said: after the prune' }).waitFor();
    expect(await replies(page).count()).toBe(2);
  });

  it('shows two people in one room each other’s messages, with their names', async () => {
    // Bob has a profile (display name, avatar); alice has none: her user id and initials.
    const profile = await fetch(`${server.url}/api/v1/me`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${bob}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        display_name: 'Bob Builder',
        avatar_url: 'https://avatars.example/bob.svg',
      }),
    });
    expect(profile.status).toBe(200);
    const first = await signedIn(browser, alice);
    const sessionId = await startConversation(first.page, 'Room', 'hello from alice');
    const second = await signedIn(browser, bob);
    // The app's content security policy lets it load only its own images: the avatar is
    // tried (the browser reports the refusal) and its initials stand in for it.
    const refused: string[] = [];
    second.page.on('console', (message) => refused.push(message.text()));
    await second.page.goto(`${server.url}/s/${sessionId}`);
    // The top bar shows who is signed in: the display name and the avatar.
    const bar = second.page.locator('header.topbar');
    await bar.locator('.avatar.initials').filter({ hasText: /^BB$/ }).waitFor();
    expect(await second.page.locator('.whoami').textContent()).toBe('Bob Builder');
    await until(
      () => refused.some((text) => text.includes('https://avatars.example/bob.svg')),
      (tried) => tried,
      'the avatar to be tried',
    );
    const fromAlice = second.page.getByRole('article', { name: 'Message from alice' });
    await fromAlice.getByText('hello from alice').waitFor();
    expect(await fromAlice.locator('.avatar.initials').textContent()).toBe('A');
    await send(second.page, 'hello from bob');
    const fromBob = first.page.getByRole('article', { name: 'Message from Bob Builder' });
    await fromBob.getByText('hello from bob').waitFor();
    await fromBob.locator('.avatar.initials').filter({ hasText: /^BB$/ }).waitFor();
    await second.page
      .getByRole('article', { name: 'Message from You' })
      .getByText('hello from bob')
      .waitFor();
    await first.page
      .getByRole('article', { name: 'Reply from default' })
      .filter({ hasText: 'hello from bob' })
      .waitFor();
    // A picture given inline (a data: URL) is shown: the image loads.
    const pixel =
      'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const pictured = await fetch(`${server.url}/api/v1/me`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${bob}`, 'content-type': 'application/json' },
      body: JSON.stringify({ avatar_url: pixel }),
    });
    expect(pictured.status).toBe(200);
    await second.page.reload();
    const picture = second.page.locator('header.topbar img.avatar');
    await picture.waitFor();
    expect(await picture.getAttribute('alt')).toBe('Bob Builder');
    await until(
      () =>
        picture.evaluate((element) => {
          const image = element as unknown as { complete: boolean; naturalWidth: number };
          return image.complete ? image.naturalWidth : 0;
        }),
      (width) => width === 1,
      'the inline avatar to load',
    );
    await first.context.close();
    await second.context.close();
  });

  it('shows an admin the budgets with what each used and holds; others get no link', async () => {
    const put = await fetch(`${server.url}/api/v1/budgets/daily_cost`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ metric: 'cost_usd', period: 'day', limit: 25 }),
    });
    expect(put.status).toBe(200);
    const page = await alicesPage();
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Budgets' })
      .click();
    await page.waitForURL(/\/budgets$/);
    const row = page.getByRole('row', { name: /daily_cost/ });
    await row.waitFor();
    expect(await row.getByRole('cell').allTextContents()).toEqual([
      'the whole tenant',
      'day',
      '$25.00',
      '$0',
      '$0',
    ]);

    const other = await signedIn(browser, bob);
    await other.page.goto(server.url);
    const nav = other.page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Inbox' }).waitFor();
    expect(await nav.getByRole('link', { name: 'Budgets' }).count()).toBe(0);
    await other.context.close();
  });

  it('shows panels beside the conversation: each palette component, a form that answers back', async () => {
    const page = await alicesPage();
    const sessionId = await startConversation(page, 'Panels', 'hello panels');
    await replies(page).filter({ hasText: 'You said: hello panels' }).waitFor();
    const document = {
      type: 'stack',
      children: [
        { type: 'markdown', text: '## Orders today' },
        { type: 'key_value', items: [{ key: 'Open', value: 2 }] },
        {
          type: 'table',
          columns: ['id', 'qty'],
          rows: [
            ['A17', 3],
            ['B2', 10],
            ['C9', 1],
          ],
        },
        {
          type: 'chart',
          kind: 'bar',
          labels: ['Mon', 'Tue'],
          series: [{ name: 'orders', values: [4, 7] }],
        },
        { type: 'progress', label: 'Shipped', value: 1, max: 4 },
        { type: 'link_list', links: [{ label: 'Tracking', href: 'https://example.com/track' }] },
        { type: 'image', src: '/favicon.svg', alt: 'Parley logo' },
        {
          type: 'form',
          name: 'refund',
          title: 'Refund',
          fields: [
            { name: 'order', label: 'Order', required: true },
            { name: 'reason', label: 'Reason', kind: 'select', options: ['damaged', 'late'] },
          ],
        },
      ],
    };
    const made = await fetch(`${server.url}/api/v1/panels`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Orders', scope: 'session', session_id: sessionId, document }),
    });
    expect(made.status).toBe(201);
    // It appears without a reload: the journal's `panel` event brings it.
    const panel = page.getByRole('region', { name: 'Panel: Orders' });
    await panel.getByRole('heading', { name: 'Orders today' }).waitFor();
    await panel.getByText('Open').waitFor();
    const firstColumn = () => panel.locator('tbody tr td:first-child').allTextContents();
    expect(await firstColumn()).toEqual(['A17', 'B2', 'C9']);
    await panel.getByRole('button', { name: 'qty' }).click();
    expect(await firstColumn()).toEqual(['C9', 'A17', 'B2']);
    await panel.getByRole('button', { name: /qty/ }).click();
    expect(await firstColumn()).toEqual(['B2', 'A17', 'C9']);
    await panel.locator('.panel-chart svg.recharts-surface').first().waitFor();
    expect(await panel.locator('.recharts-bar-rectangle').count()).toBe(2);
    expect(await panel.locator('progress').getAttribute('value')).toBe('1');
    expect(await panel.getByRole('link', { name: 'Tracking' }).getAttribute('href')).toBe(
      'https://example.com/track',
    );
    await panel.getByRole('img', { name: 'Parley logo' }).waitFor();

    const form = panel.getByRole('form', { name: 'Refund' });
    await form.getByLabel('Order').fill('A17');
    await form.getByLabel('Reason').selectOption('late');
    await form.getByRole('button', { name: 'Submit' }).click();
    await form.getByText('Sent to the conversation').waitFor();
    await replies(page).filter({ hasText: '"reason": "late"' }).waitFor();

    // An agent's ephemeral panel shows while the page is open, and is gone after a reload.
    const ephemeral = {
      title: 'Right now',
      scope: 'ephemeral',
      document: { type: 'markdown', text: 'only live' },
    };
    await send(page, `/panel ${JSON.stringify(ephemeral)}`);
    await page.getByRole('region', { name: 'Panel: Right now' }).getByText('only live').waitFor();
    await page.reload();
    await page.getByRole('region', { name: 'Panel: Orders' }).waitFor();
    await replies(page).filter({ hasText: 'Tool show_panel returned' }).waitFor();
    expect(await page.getByRole('region', { name: 'Panel: Right now' }).count()).toBe(0);
  });

  it('fits a phone: the list, then one conversation with a way back', async () => {
    const { context, page } = await signedIn(browser, alice, { viewport: phone });
    await page.goto(server.url);
    const list = page.getByRole('navigation', { name: 'Conversations' });
    await list.getByRole('link', { name: /Room/ }).click();
    await page.getByRole('textbox', { name: 'Message' }).waitFor();
    await list.waitFor({ state: 'hidden' });
    const width = await page.evaluate(
      () => (globalThis as any).document.documentElement.scrollWidth,
    );
    expect(width).toBeLessThanOrEqual(phone.width);
    await page.getByRole('link', { name: 'Back to conversations' }).click();
    await list.waitFor();
    await context.close();
  });

  it('renders markup from people and models as text: no HTML ever runs', async () => {
    const page = await alicesPage();
    const attack = '<img src=x onerror="window.__xss=1"> **bold** <script>window.__xss=2</script>';
    await startConversation(page, 'XSS', attack);
    await replies(page).filter({ hasText: '</script>' }).waitFor();
    expect(await replies(page).locator('.markdown').textContent()).toBe(
      'You said: <img src=x onerror="window.__xss=1"> bold <script>window.__xss=2</script>',
    );
    expect(await page.locator('.thread img, .thread script').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as any).__xss)).toBeUndefined();
    expect(
      await replies(page)
        .locator('strong', { hasText: /^bold$/ })
        .count(),
    ).toBe(1);
  });
});
