import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPhotoId } from '../src/ids.js';
import { insertPhoto } from '../src/store/photos.js';
import { launchBrowser, longMessage, signedIn } from './support/browser.js';
import { until } from './support/poll.js';
import { ProviderServer } from './support/providerServer.js';
import { providerKey } from './support/providerKinds.js';
import { startTestServer, type TestServer } from './support/server.js';

// The web app's images, photos and voices in Chromium against a real Parley: composer
// attachments (picker, paste, drop, refusals), the photo explorer, replies played and read
// aloud (espeak-ng speaks WAV). The demo model writes a word every 40 ms, so a reply is
// still streaming when its first sentence is spoken. Every wait is for a state.
let server: TestServer;
let providers: ProviderServer;
let browser: Browser;
let page: Page;
const key = 'ann-key';
const auth = { authorization: `Bearer ${key}` };

// Real images, so the browser can show them.
const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const gif = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

beforeAll(async () => {
  // OpenAI's transcription endpoint, played locally: speech input for the microphone.
  providers = await ProviderServer.start();
  providers.on('POST', '/v1/audio/transcriptions', {
    json: { task: 'transcribe', language: 'english', duration: 2, text: 'Ship it today.' },
  });
  server = await startTestServer(
    {
      providers: {
        demo: { kind: 'demo' },
        oa: { kind: 'openai', api_key_env: 'TEST_PROVIDER_KEY', base_url: `${providers.url}/v1` },
      },
      limits: { attachment_bytes: 4096 },
      auth: { keys: [{ key_env: 'K_ANN', tenant: 'acme', user: 'ann', roles: [] }] },
      agents: {
        default: {
          model: 'demo/vision',
          voice: 'espeak/en-us',
          icon: `data:image/png;base64,${png.toString('base64')}`,
        },
      },
      voices: [{ provider: 'espeak', key: 'en-us', name: 'American' }],
      // Small, so that a reply too long to speak is quick to write.
      speech: { max_characters: 400, transcription_model: 'oa/whisper-1' },
    },
    { K_ANN: key, PARLEY_DEMO_DELAY_MS: '40', TEST_PROVIDER_KEY: providerKey },
  );
  browser = await launchBrowser();
  page = (await signedIn(browser, key)).page;
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await providers?.close();
});

async function api(method: string, path: string, body?: unknown): Promise<any> {
  const answer = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return answer.status === 204 ? null : answer.json();
}

async function newConversation(): Promise<string> {
  const session = await api('POST', '/api/v1/chat/sessions', {});
  await page.goto(`${server.url}/s/${session.session_id}`);
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
  return session.session_id as string;
}

async function turnsOf(sessionId: string) {
  const found = await server.db.query<{ turn_id: string; attachments: string[] | null }>(
    'select turn_id, attachments from turns where session_id = $1 order by admitted_sequence',
    [sessionId],
  );
  return found.rows;
}

const replies = () => page.getByRole('article', { name: 'Reply from default' });
const mine = () => page.getByRole('article', { name: 'Message from You' });

/** Puts `files` on the composer as a paste (`paste`) or a drop (`drop`) would. */
async function hand(
  how: 'paste' | 'drop',
  files: { name: string; type: string; base64: string }[],
) {
  await page.evaluate(
    ({ how, files }) => {
      const page = globalThis as any;
      const transfer = new page.DataTransfer();
      for (const file of files) {
        const bytes = Uint8Array.from(atob(file.base64), (char) => char.charCodeAt(0));
        transfer.items.add(new page.File([bytes], file.name, { type: file.type }));
      }
      const doc = page.document;
      if (how === 'paste') {
        const box = doc.querySelector('textarea[aria-label="Message"]');
        box.dispatchEvent(
          new page.ClipboardEvent('paste', {
            clipboardData: transfer,
            bubbles: true,
            cancelable: true,
          }),
        );
      } else {
        const composer = doc.querySelector('form[aria-label="Composer"]');
        composer.dispatchEvent(
          new page.DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }),
        );
      }
    },
    { how, files },
  );
}

/** The first four bytes of `bytes`, as text (`RIFF` for a WAV). */
const magicOf = (bytes: Buffer) => bytes.subarray(0, 4).toString('latin1');

/**
 * Waits until an `<audio>` has loaded its source's metadata (or failed): a source the
 * browser could fetch and decode has a duration. The content security policy applies.
 */
async function loaded(audio: ReturnType<Page['locator']>) {
  return until(
    () =>
      audio.evaluate((element) => {
        const media = element as any;
        return {
          source: String(media.currentSrc),
          ready: Number(media.readyState),
          error: (media.error?.code as number | undefined) ?? null,
          duration: Number(media.duration),
        };
      }),
    (state) => state.ready >= 1 || state.error !== null,
    'the audio to load',
  );
}

describe('composer attachments', () => {
  it('attaches with the picker, sends them with the turn, and shows them in the message', async () => {
    const sessionId = await newConversation();
    await page.getByLabel('Image files').setInputFiles({
      name: 'dot.png',
      mimeType: 'image/png',
      buffer: png,
    });
    const drafts = page.getByRole('list', { name: 'Attached images' });
    await drafts.getByRole('img', { name: 'dot.png' }).waitFor();
    // Removable before sending.
    await page.getByLabel('Image files').setInputFiles({
      name: 'other.gif',
      mimeType: 'image/gif',
      buffer: gif,
    });
    await drafts.getByRole('img', { name: 'other.gif' }).waitFor();
    await page.getByRole('button', { name: 'Remove other.gif' }).click();
    await drafts.getByRole('img', { name: 'other.gif' }).waitFor({ state: 'detached' });

    await page.getByRole('textbox', { name: 'Message' }).fill('What is this?');
    await page.getByRole('button', { name: 'Send' }).click();
    // The vision model saw exactly the one image.
    await replies()
      .filter({ hasText: `I see an image (image/png, ${png.byteLength} bytes).` })
      .waitFor();
    const [turn] = await turnsOf(sessionId);
    expect(turn?.attachments).toHaveLength(1);
    const attachmentId = turn!.attachments![0]!;
    const shown = mine().getByRole('img', { name: 'Attached image' });
    await shown.waitFor();
    expect(await shown.getAttribute('data-attachment-id')).toBe(attachmentId);
    await until(
      () => shown.evaluate((image) => (image as any).naturalWidth as number),
      (width) => width === 1,
      'the image to be drawn',
    );
    expect(await drafts.count()).toBe(0);

    // After a reload the message still shows its image (fetched from the server), named
    // by the journal: not from what this browser remembers sending.
    await page.evaluate(() => (globalThis as any).localStorage.clear());
    await page.reload();
    const reloaded = mine().getByRole('img', { name: 'Attached image' });
    await reloaded.waitFor();
    expect(await reloaded.getAttribute('src')).toMatch(/^blob:/);
    await until(
      () => reloaded.evaluate((image) => (image as any).naturalWidth as number),
      (width) => width === 1,
      'the reloaded image to be drawn',
    );
  });

  it('takes images pasted into the message box and dropped onto the composer', async () => {
    const sessionId = await newConversation();
    await hand('paste', [
      { name: 'pasted.png', type: 'image/png', base64: png.toString('base64') },
    ]);
    await hand('drop', [
      { name: 'dropped.gif', type: 'image/gif', base64: gif.toString('base64') },
    ]);
    const drafts = page.getByRole('list', { name: 'Attached images' });
    await drafts.getByRole('img', { name: 'pasted.png' }).waitFor();
    await drafts.getByRole('img', { name: 'dropped.gif' }).waitFor();
    // A dropped file that is no image is refused here, with its type.
    await hand('drop', [{ name: 'notes.txt', type: 'text/plain', base64: 'aGk=' }]);
    await page.getByRole('alert').filter({ hasText: 'notes.txt (text/plain)' }).waitFor();
    expect(await drafts.getByRole('listitem').count()).toBe(2);

    await page.getByRole('textbox', { name: 'Message' }).fill('Two of them');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    await replies()
      .filter({
        hasText: `I see an image (image/png, ${png.byteLength} bytes). I see an image (image/gif, ${gif.byteLength} bytes).`,
      })
      .waitFor();
    const [turn] = await turnsOf(sessionId);
    expect(turn?.attachments).toHaveLength(2);
    await until(
      () => mine().getByRole('img', { name: 'Attached image' }).count(),
      (count) => count === 2,
      'both images in the message',
    );
  });

  it("shows what the server refuses with its code, and sends nothing until it's removed", async () => {
    const sessionId = await newConversation();
    await page.getByLabel('Image files').setInputFiles({
      name: 'fake.png',
      mimeType: 'image/png',
      buffer: Buffer.from('this is text, not a picture'),
    });
    await page.getByLabel('Image files').setInputFiles({
      name: 'huge.png',
      mimeType: 'image/png',
      buffer: Buffer.concat([png, Buffer.alloc(8192)]),
    });
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('Look');
    await box.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'fake.png: unsupported_media_type' }).waitFor();
    await page.getByRole('alert').filter({ hasText: 'huge.png: payload_too_large' }).waitFor();
    expect(await box.inputValue()).toBe('Look');
    expect(await turnsOf(sessionId)).toEqual([]);

    await page.getByRole('button', { name: 'Remove fake.png' }).click();
    await page.getByRole('button', { name: 'Remove huge.png' }).click();
    await box.press('Enter');
    await replies().filter({ hasText: 'You said: Look' }).waitFor();
    expect((await turnsOf(sessionId)).map((turn) => turn.attachments)).toEqual([null]);
  });
});

describe('the photo explorer', () => {
  it('lists the photos newest first, filters by origin, pages, renames and deletes', async () => {
    // Enough for a second page (30 a page), the newest with a title; one generated image.
    for (let index = 0; index < 30; index++) {
      await fetch(`${server.url}/api/v1/photos`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'image/gif' },
        body: gif,
      });
    }
    const generated = await insertPhoto(server.db, {
      photoId: newPhotoId(),
      tenant: 'acme',
      owner: 'ann',
      origin: 'generated',
      title: 'A red dot',
      source: { prompt: 'a red dot' },
      mediaType: 'image/png',
      bytes: png,
    });
    const titled = (await (
      await fetch(`${server.url}/api/v1/photos?title=Holiday`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'image/png' },
        body: png,
      })
    ).json()) as { photo_id: string };
    const total = (await api('GET', '/api/v1/photos?limit=200')).items.length as number;
    expect(total).toBeGreaterThan(30);

    await page.goto(server.url);
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Photos' })
      .click();
    const grid = page.getByRole('list', { name: 'Photo library' });
    const tiles = grid.getByRole('listitem');
    await grid.getByRole('button', { name: 'Open Holiday' }).waitFor();
    // Newest first: the titled one, then the generated one.
    await until(
      () => tiles.count(),
      (count) => count === 30,
      'the first page',
    );
    expect(await tiles.nth(0).getByRole('img').getAttribute('data-photo-id')).toBe(titled.photo_id);
    expect(await tiles.nth(1).getByRole('img').getAttribute('data-photo-id')).toBe(
      generated.photo_id,
    );
    await page.getByRole('button', { name: 'More' }).click();
    await until(
      () => tiles.count(),
      (count) => count === total,
      'every photo',
    );
    await page.getByRole('button', { name: 'More' }).waitFor({ state: 'detached' });

    const origin = page.getByRole('combobox', { name: 'Origin' });
    await origin.selectOption('generated');
    await until(
      () => tiles.count(),
      (count) => count === 1,
      'the generated photo alone',
    );
    await grid.getByRole('button', { name: 'Open A red dot' }).waitFor();
    await origin.selectOption('upload');
    await until(
      () => tiles.count(),
      (count) => count === 30,
      'uploads only',
    );
    await grid.getByRole('button', { name: 'Open A red dot' }).waitFor({ state: 'detached' });
    await origin.selectOption('all');

    // Rename.
    await grid.getByRole('button', { name: 'Open Holiday' }).click();
    const detail = page.getByRole('region', { name: 'Photo' });
    await detail.getByRole('textbox', { name: 'Photo title' }).fill('Beach');
    await detail.getByRole('button', { name: 'Save title' }).click();
    await grid.getByRole('button', { name: 'Open Beach' }).waitFor();
    expect((await api('GET', `/api/v1/photos/${titled.photo_id}`)).title).toBe('Beach');

    // Delete.
    await detail.getByRole('button', { name: 'Delete' }).click();
    await grid.getByRole('button', { name: 'Open Beach' }).waitFor({ state: 'detached' });
    expect((await api('GET', `/api/v1/photos/${titled.photo_id}`)).error).toBe('photo_not_found');
  });

  it('opens a photo in a new conversation, attached to its composer', async () => {
    const photos = (await api('GET', '/api/v1/photos?limit=200')).items.length as number;
    await page.goto(`${server.url}/photos`);
    await page.getByRole('button', { name: 'Open A red dot' }).click();
    await page
      .getByRole('region', { name: 'Photo' })
      .getByRole('button', { name: 'Open in a conversation' })
      .click();
    await page.waitForURL(/\/s\/[A-Za-z0-9]+$/);
    const sessionId = page.url().split('/s/')[1] as string;
    await page
      .getByRole('list', { name: 'Attached images' })
      .getByRole('img', { name: 'A red dot' })
      .waitFor();
    await page.getByRole('textbox', { name: 'Message' }).fill('And this one?');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    await replies()
      .filter({ hasText: `I see an image (image/png, ${png.byteLength} bytes).` })
      .waitFor();
    const [turn] = await turnsOf(sessionId);
    expect(turn?.attachments).toHaveLength(1);
    await mine().getByRole('img', { name: 'Attached image' }).waitFor();
    // Attached from the library, not uploaded again: the library holds it once.
    expect((await api('GET', '/api/v1/photos?limit=200')).items).toHaveLength(photos);
  });
});

describe('speech', () => {
  it("plays a reply in its agent's voice from a WAV object URL", async () => {
    await newConversation();
    await page.getByRole('textbox', { name: 'Message' }).fill('Read me.');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    const reply = replies().filter({ hasText: 'You said: Read me.' });
    // The agent's icon beside its name.
    expect(await reply.locator('img.avatar').getAttribute('src')).toBe(
      `data:image/png;base64,${png.toString('base64')}`,
    );
    const speech = page.waitForResponse((response) => response.url().endsWith('/speech'));
    await reply.getByRole('button', { name: 'Play reply' }).click();
    expect(magicOf(await (await speech).body())).toBe('RIFF');
    const audio = reply.locator('audio[aria-label="Reply audio"]');
    await audio.waitFor({ state: 'attached' });
    const state = await loaded(audio);
    expect(state.source, 'the source the browser took (none: refused)').toMatch(/^blob:/);
    expect(
      state.error,
      'MediaError 4: the source was refused (a CSP without media-src blob:?)',
    ).toBeNull();
    expect(state.duration).toBeGreaterThan(0);
  });

  it('shows when a reply cannot be read aloud', async () => {
    await newConversation();
    // Longer than speech.max_characters: the server refuses to speak it.
    const words = longMessage('speechless', 40);
    await page.getByRole('textbox', { name: 'Message' }).fill(words);
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    const reply = replies().filter({ hasText: 'speechless39' });
    await reply.getByRole('button', { name: 'Play reply' }).click();
    await reply.getByRole('alert').filter({ hasText: 'message_too_long' }).waitFor();
    await reply.locator('audio').waitFor({ state: 'detached' });
  });

  it('reads a streaming reply aloud sentence by sentence, before it ends', async () => {
    const sessionId = await newConversation();
    await page.getByLabel('Read replies aloud').check();
    const firstSpeech = page.waitForRequest(
      (request) => request.url().endsWith('/api/v1/speech') && request.method() === 'POST',
    );
    const firstClip = page.waitForResponse((response) => response.url().endsWith('/api/v1/speech'));
    await page
      .getByRole('textbox', { name: 'Message' })
      .fill(`Hello there. ${longMessage('w', 60)}`);
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    const request: Request = await firstSpeech;
    // The reply is still being written: its turn has no `done` in the journal yet.
    const done = await server.db.query(
      `select 1 from events where session_id = $1 and type = 'done'`,
      [sessionId],
    );
    expect(done.rows).toEqual([]);
    // In the agent's voice, as Play reads it.
    expect(request.postDataJSON()).toEqual({
      text: 'You said: Hello there.',
      voice: 'espeak/en-us',
    });
    expect(magicOf(await (await firstClip).body())).toBe('RIFF');
    const reader = page.locator('audio[aria-label="Read aloud"]');
    await until(
      () => reader.getAttribute('src'),
      (source) => source?.startsWith('blob:') === true,
      'a clip in the reader',
    );
    const state = await loaded(reader);
    expect(
      state.error,
      'MediaError 4: the source was refused (a CSP without media-src blob:?)',
    ).toBeNull();
    expect(state.duration).toBeGreaterThan(0);
    await replies().filter({ hasText: 'w59' }).waitFor();
  });

  it("reads a failure notice in the user's system voice", async () => {
    await api('PUT', '/api/v1/me/preferences', { system_voice: 'espeak/en-us' });
    await newConversation();
    await page.getByLabel('Read replies aloud').check();
    const notice = page.waitForRequest(
      (request) =>
        request.url().endsWith('/api/v1/speech') &&
        (request.postDataJSON() as { voice?: string }).voice === 'espeak/en-us',
    );
    await page.getByRole('textbox', { name: 'Message' }).fill('/fail permanent');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    expect((await notice).postDataJSON().text).toContain('credentials');
  });

  it('takes a spoken message from the microphone into the message box', async () => {
    await newConversation();
    const heard = page.waitForRequest((request) =>
      request.url().endsWith('/api/v1/transcriptions'),
    );
    await page.getByRole('button', { name: 'Speak a message' }).click();
    // Chromium's synthetic microphone beeps; stop once some of it is recorded.
    const stop = page.getByRole('button', { name: 'Stop recording' });
    await until(
      async () => Number(await stop.getAttribute('data-parts')),
      (parts) => parts > 0,
      'some audio recorded',
    );
    await stop.click();
    const sent = await heard;
    expect(sent.headers()['content-type']).toMatch(/^audio\/webm/);
    const box = page.getByRole('textbox', { name: 'Message' });
    await until(
      () => box.inputValue(),
      (value) => value === 'Ship it today.',
      'the words heard in the box',
    );
    const asked = providers.requests.find((entry) => entry.path === '/v1/audio/transcriptions');
    expect(asked?.body).toMatch(/name="model"\r\n\r\nwhisper-1/);
  });
});
