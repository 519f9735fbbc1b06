import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePng } from '../src/providers/png.js';
import { launchBrowser, signedIn } from './support/browser.js';
import { until } from './support/poll.js';
import { request, startTestServer, type TestServer } from './support/server.js';

// The web app's system voice (Settings), an agent's icon made of a photo (the desktop's
// agent editor) and the composer of a server that takes no speech, in Chromium against a
// real Parley without a transcription model. Every wait is for a state.
let server: TestServer;
let browser: Browser;
let page: Page;
const key = 'ann-key';
const auth = { authorization: `Bearer ${key}` };

const api = (method: string, path: string, body?: unknown) =>
  request(server.url, method, path, body, auth);

/** A photo larger than an icon: 320×200 pixels of a gradient. */
const photo = (() => {
  const width = 320;
  const height = 200;
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * 3;
      rgb[at] = Math.round((x / width) * 255);
      rgb[at + 1] = Math.round((y / height) * 255);
      rgb[at + 2] = 128;
    }
  }
  return Buffer.from(encodePng({ width, height, rgb }));
})();

/** Signature, then an IHDR chunk of 13 bytes: width and height. */
function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

beforeAll(async () => {
  server = await startTestServer(
    {
      auth: { keys: [{ key_env: 'K_ANN', tenant: 'acme', user: 'ann', roles: ['admin'] }] },
      agents: { default: { model: 'demo/echo' } },
      voices: [
        { provider: 'espeak', key: 'en-us', name: 'American', language: 'en-US' },
        { provider: 'espeak', key: 'de', name: 'German', language: 'de' },
        { provider: 'espeak', key: 'fr', name: 'Unmarked' },
      ],
      // No speech.transcription_model: the server takes no speech.
    },
    { K_ANN: key },
  );
  browser = await launchBrowser();
  page = (await signedIn(browser, key)).page;
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the system voice in Settings', () => {
  it('lists the catalog, saves the choice, keeps it after a reload, and uses it at once', async () => {
    const session = await api('POST', '/api/v1/chat/sessions', { title: 'Voice check' });
    expect(session.status).toBe(201);
    await page.goto(`${server.url}/settings`);
    const picker = page.getByRole('combobox', { name: 'System voice' });
    await picker.getByRole('option', { name: 'German (de)' }).waitFor({ state: 'attached' });
    expect(await picker.inputValue()).toBe('');
    // Each voice of the catalog by its name and language, after the default.
    const catalog = (await api('GET', '/api/v1/voices')).body.items as { id: string }[];
    expect(catalog.map((voice) => voice.id)).toEqual(
      expect.arrayContaining(['espeak/en-us', 'espeak/de', 'espeak/fr']),
    );
    const options = await picker.getByRole('option').allTextContents();
    expect(options).toHaveLength(catalog.length + 1);
    expect(options[0]).toBe('Default voice');
    expect(options).toEqual(
      expect.arrayContaining(['American (en-US)', 'German (de)', 'Unmarked']),
    );

    // A page that has not been reloaded since keeps this mark.
    await page.evaluate(() => ((globalThis as any).parleyNotReloaded = true));
    await picker.selectOption({ label: 'German (de)' });
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    const saved = await api('GET', '/api/v1/me/preferences');
    expect(saved.body.system_voice).toBe('espeak/de');

    // The conversation reads a failure notice in it, without a reload.
    await page
      .getByRole('navigation', { name: 'Conversations' })
      .getByRole('link', { name: /^Voice check/ })
      .click();
    await page.getByLabel('Read replies aloud').check();
    const notice = page.waitForRequest(
      (sent) => sent.url().endsWith('/api/v1/speech') && sent.method() === 'POST',
    );
    await page.getByRole('textbox', { name: 'Message' }).fill('/fail permanent');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    expect((await notice).postDataJSON().voice).toBe('espeak/de');
    expect(await page.evaluate(() => (globalThis as any).parleyNotReloaded)).toBe(true);

    // Shown as saved after a reload; back to the default voice when chosen so.
    await page.goto(`${server.url}/settings`);
    await until(
      () => page.getByRole('combobox', { name: 'System voice' }).inputValue(),
      (value) => value === 'espeak/de',
      'the saved voice selected',
    );
    await picker.selectOption({ label: 'Default voice' });
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    expect((await api('GET', '/api/v1/me/preferences')).body.system_voice).toBeNull();

    // A refusal shows with the server's code; nothing is saved.
    await picker.selectOption({ label: 'American (en-US)' });
    await page.getByRole('textbox', { name: 'Language' }).fill('not a language');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').filter({ hasText: 'invalid_request' }).waitFor();
    expect((await api('GET', '/api/v1/me/preferences')).body.system_voice).toBeNull();
  });
});

describe("an agent's icon in the desktop's editor", () => {
  it('is made of a photo of the library, at most 128×128, and saved as a PNG data URL', async () => {
    const uploaded = await fetch(`${server.url}/api/v1/photos?title=Gradient`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'image/png' },
      body: photo,
    });
    expect(uploaded.status).toBe(201);

    await page.goto(`${server.url}/desktop`);
    const panel = page.getByRole('region', { name: 'Agents' });
    const row = panel.getByRole('listitem', { name: 'Agent default' });
    await row.getByRole('button', { name: 'Definition' }).click();
    const editor = panel.getByRole('region', { name: 'Definition of default' });
    const icon = editor.getByRole('group', { name: 'Icon' });
    await icon.getByRole('button', { name: 'Choose from photos' }).click();
    const choice = icon
      .getByRole('list', { name: 'Photos to choose from' })
      .getByRole('button', { name: 'Use Gradient' });
    // Its thumbnail drawn from the library.
    await until(
      () => choice.locator('img').evaluate((image) => (image as any).naturalWidth as number),
      (width) => width === 320,
      'the thumbnail drawn',
    );
    await choice.click();
    const preview = icon.getByRole('img', { name: 'Icon of default' });
    await until(
      async () => (await preview.count()) === 1 && (await preview.getAttribute('src')),
      (source) => typeof source === 'string' && source.startsWith('data:image/png;base64,'),
      'the icon previewed',
    );
    const box = editor.getByRole('textbox', { name: 'Definition (JSON)' });
    expect(JSON.parse(await box.inputValue()).icon).toBe(await preview.getAttribute('src'));
    await editor.getByRole('button', { name: 'Save', exact: true }).click();
    await editor
      .getByRole('status')
      .filter({ hasText: /Saved as revision \d+/ })
      .waitFor();

    const listed = await api('GET', '/api/v1/agents');
    const agent = listed.body.items.find((item: any) => item.name === 'default');
    expect(agent.icon).toMatch(/^data:image\/png;base64,/);
    expect(agent.icon.length).toBeLessThanOrEqual(65_536);
    const bytes = Buffer.from(agent.icon.slice('data:image/png;base64,'.length), 'base64');
    // 320×200 made 128 wide, its proportions kept.
    expect(pngSize(bytes)).toEqual({ width: 128, height: 80 });
    expect((await api('GET', '/api/v1/agents/default')).body.definition.icon).toBe(agent.icon);

    // Removed: the definition has no icon any more.
    await icon.getByRole('button', { name: 'Remove icon' }).click();
    await preview.waitFor({ state: 'detached' });
    expect(JSON.parse(await box.inputValue())).not.toHaveProperty('icon');
    await editor.getByRole('button', { name: 'Save', exact: true }).click();
    await until(
      () => api('GET', '/api/v1/agents'),
      (answer) => answer.body.items.find((item: any) => item.name === 'default')?.icon == null,
      'the icon removed',
    );
  });
});

describe('the composer of a server without a transcription model', () => {
  it('shows no microphone, and the composer itself', async () => {
    const session = await api('POST', '/api/v1/chat/sessions', {});
    const voices = page.waitForResponse((answer) => answer.url().endsWith('/api/v1/voices'));
    await page.goto(`${server.url}/s/${session.body.session_id}`);
    expect((await (await voices).json()).transcription).toBe(false);
    const composer = page.getByRole('form', { name: 'Composer' });
    await composer.getByRole('textbox', { name: 'Message' }).waitFor();
    await composer.getByRole('button', { name: 'Attach images' }).waitFor();
    // The microphone has had the server's answer, and shows no button for it.
    await composer.locator('[data-speech-input="off"]').waitFor({ state: 'attached' });
    expect(await page.getByRole('button', { name: /speak|recording/i }).count()).toBe(0);
    expect(await page.locator('button.microphone').count()).toBe(0);
  });
});
