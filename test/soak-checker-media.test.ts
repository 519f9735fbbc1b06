import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkDatabase, type Category } from '../scripts/soak/checker/index.js';
import { Apis } from '../scripts/soak/http.js';
import { Ledger, type MediaRecord } from '../scripts/soak/ledger.js';
import { runMediaClient } from '../scripts/soak/mediaClient.js';
import { Random } from '../scripts/soak/random.js';
import { startTestServer, type TestServer } from './support/server.js';

// The soak's media client (scripts/soak/mediaClient.ts) against a real server, and its
// checker (scripts/soak/checker/media.ts) on what it left: two rounds of upload (with an
// Idempotency-Key), a turn carrying the image, and its reply read aloud twice by
// espeak-ng. The checker finds nothing; then each rule is broken, in the database or in
// what the client was told, and the checker must name it in the right figure. Every
// corruption is undone, so each case sees the clean run plus one fault.

let server: TestServer;
const ledger = new Ledger();

beforeAll(async () => {
  server = await startTestServer({
    agents: { default: { model: 'demo/echo', tools: { generate_image: 'allow' } } },
  });
  await runMediaClient({
    apis: new Apis([server.url]),
    ledger,
    random: new Random(20261203),
    count: 2,
    windowMs: 0,
    followTimeoutMs: 60_000,
  });
}, 120_000);

afterAll(async () => {
  await server?.close();
});

function first(): MediaRecord {
  return [...ledger.media.values()][0] as MediaRecord;
}

async function rules(from: Ledger = ledger): Promise<string[]> {
  const result = await checkDatabase(server.db, from);
  return result.findings.violations.map((violation) => `${violation.category}: ${violation.check}`);
}

function expectRule(found: string[], category: Category, check: string): void {
  expect(found).toContain(`${category}: ${check}`);
}

/** A copy of the ledger whose first upload is changed by `change`. */
function ledgerWith(change: (record: MediaRecord) => void): Ledger {
  const copy = new Ledger();
  for (const [turnId, turn] of ledger.turns) copy.turns.set(turnId, { ...turn });
  for (const [label, record] of ledger.media) copy.media.set(label, { ...record });
  change(copy.media.get(first().label) as MediaRecord);
  return copy;
}

describe('the media client', () => {
  it('uploads, admits, hears each reply twice the same, and the checker finds nothing', async () => {
    expect(ledger.violations).toEqual([]);
    expect([...ledger.media.keys()].sort()).toEqual(['soakp1', 'soakp2']);
    for (const record of ledger.media.values()) {
      expect(record.spokenMessageId).not.toBeNull();
      expect(ledger.turns.get(record.label)).toMatchObject({
        kind: 'media',
        sessionId: record.sessionId,
      });
    }
    expect(ledger.counters.speechRequests).toBe(4);
    expect(ledger.counters.mediaGivenUp).toBe(0);
    const result = await checkDatabase(server.db, ledger);
    expect(result.findings.violations).toEqual([]);
    expect(result.media).toEqual({
      uploads: 2,
      attachments: 2,
      photos: 2,
      generated: 2,
      spoken: 2,
      speechRows: 2,
    });
  });

  it('sends an upload again with its key: the same attachment, nothing stored twice', async () => {
    const { label, sessionId, attachmentId } = first();
    const again = await upload(sessionId, { 'idempotency-key': label });
    expect(again.status).toBe(201);
    expect(await again.json()).toMatchObject({ attachment_id: attachmentId });
    expect(await rules()).toEqual([]);
  });
});

const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

function upload(sessionId: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}/api/v1/chat/sessions/${sessionId}/attachments`, {
    method: 'POST',
    headers: { 'parley-protocol-version': '1', 'content-type': 'image/png', ...headers },
    body: png,
  });
}

describe('the media checker finds', () => {
  it('a second attachment and photo stored in an upload session (doubled)', async () => {
    const { sessionId } = first();
    // Another upload into the same session: what a retry that its key did not stop stores.
    const response = await upload(sessionId);
    expect(response.status).toBe(201);
    const { attachment_id: extra } = (await response.json()) as { attachment_id: string };
    try {
      const found = await rules();
      expectRule(found, 'doubled', 'upload stored once');
      expectRule(found, 'doubled', 'photo stored once');
    } finally {
      await server.db.query(`delete from photos where source->>'attachment_id' = $1`, [extra]);
      await server.db.query('delete from attachments where attachment_id = $1', [extra]);
    }
    expect(await rules()).toEqual([]);
  });

  it('a generated image stored twice, and one missing (doubled, lost)', async () => {
    const { imageTurnId } = first();
    const copy = await server.db.query<{ photo_id: string }>(
      `insert into photos (photo_id, tenant, owner, origin, title, source, media_type, bytes, size)
       select photo_id || '_copy', tenant, owner, origin, title, source, media_type, bytes, size
         from photos where origin = 'generated' and source->>'turn_id' = $1
       returning photo_id`,
      [imageTurnId],
    );
    try {
      expectRule(await rules(), 'doubled', 'generated image stored once');
    } finally {
      await server.db.query('delete from photos where photo_id = $1', [copy.rows[0]?.photo_id]);
    }
    const missing = await rules(ledgerWith((record) => (record.imageTurnId = 'soak_no_image')));
    expectRule(missing, 'lost', 'generated image stored once');
  });

  it('an answer naming another attachment for the same key (doubled)', async () => {
    const copy = ledgerWith(() => {});
    copy.uploaded(first().label, first().sessionId, 'att_other');
    expectRule(await rules(copy), 'doubled', 'client: attachment duplicate');
  });

  it('an attachment other than the one answered (mismatch)', async () => {
    const found = await rules(ledgerWith((record) => (record.attachmentId = 'att_other')));
    expectRule(found, 'mismatch', 'upload stored once');
    expectRule(found, 'mismatch', 'photo stored once');
    expectRule(found, 'mismatch', 'turn carries its attachment');
  });

  it('a turn that does not carry its attachment (mismatch)', async () => {
    const { label } = first();
    const before = await server.db.query<{ attachments: unknown }>(
      'select attachments from turns where turn_id = $1',
      [label],
    );
    await server.db.query(`update turns set attachments = '[]'::jsonb where turn_id = $1`, [label]);
    try {
      expect(await rules()).toEqual(['mismatch: turn carries its attachment']);
    } finally {
      await server.db.query('update turns set attachments = $2::jsonb where turn_id = $1', [
        label,
        JSON.stringify(before.rows[0]?.attachments),
      ]);
    }
  });

  it('a reply that does not answer its message (mismatch)', async () => {
    const copy = ledgerWith(() => {});
    const turn = copy.turns.get(first().label);
    if (turn) turn.message = `${turn.message} and more`;
    expect(await rules(copy)).toContain('mismatch: media reply answers its turn');
  });

  it('speech heard but not kept (lost)', async () => {
    const { spokenMessageId } = first();
    const kept = await server.db.query<Record<string, unknown>>(
      'select tenant, message_id, voice, media_type, audio from speech where message_id = $1',
      [spokenMessageId],
    );
    expect(kept.rows).toHaveLength(1);
    await server.db.query('delete from speech where message_id = $1', [spokenMessageId]);
    try {
      expect(await rules()).toEqual(['lost: speech kept once']);
    } finally {
      const row = kept.rows[0] as Record<string, unknown>;
      await server.db.query(
        'insert into speech (tenant, message_id, voice, media_type, audio) values ($1, $2, $3, $4, $5)',
        [row.tenant, row.message_id, row.voice, row.media_type, row.audio],
      );
    }
    expect(await rules()).toEqual([]);
  });
});
