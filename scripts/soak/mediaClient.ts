import { follow, type SessionView } from './follow.js';
import { sleep, type JsonAnswer } from './http.js';
import { messageFor } from './messages.js';
import { driveSpread, retryPause, type ProtocolClientContext } from './protocolClient.js';
import type { Random } from './random.js';

/**
 * A client of the photo library, attachments and speech under the chaos (docs/PROTOCOL.md,
 * "Attachments", "Photos", "Voices and speech"). Each round, in a session of its own:
 * 1. creates the session (an empty session left by a retried create is harmless);
 * 2. uploads a 1×1 PNG with its label as the `Idempotency-Key`, sent again with the same
 *    key after no answer, a 5xx or a timeout, and a third of the time once more on
 *    purpose after its answer: every answer must name the same attachment (the upload
 *    lands in the photo library too, once);
 * 3. admits a turn carrying it (turn_id: the label; retried unchanged), acknowledged in
 *    the ledger as a `media` turn, so the checker holds it to ending exactly once;
 * 4. follows the session until the turn ends, finds its reply in the transcript and asks
 *    for it read aloud twice (`GET …/messages/{id}/speech`, retried on failure): both
 *    answers must be the same `audio/wav` (`RIFF`…) byte for byte, the kept speech.
 * 5. admits a turn whose agent generates an image (`generate`), followed to its end.
 * What it was told goes to the ledger (`media`), the rest to checker/media.ts.
 */

/** A valid 1×1 PNG (one grey pixel): the bytes only have to be a PNG's. */
const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

const attemptTimeoutMs = 10_000;

export async function runMediaClient(context: ProtocolClientContext): Promise<void> {
  await driveSpread(context, 'soakp', async (random, label) => {
    if (!(await driveMedia(context, random, label))) context.ledger.counters.mediaGivenUp += 1;
  });
}

/** One round; false when it was given up on before its speech was heard. */
async function driveMedia(
  context: ProtocolClientContext,
  random: Random,
  label: string,
): Promise<boolean> {
  const { ledger, apis } = context;
  const deadline = Date.now() + context.followTimeoutMs;
  const created = await apis.send('POST', '/api/v1/chat/sessions', {}, { deadline, random });
  if (!created) return false;
  if (created.status !== 201 || typeof created.body?.session_id !== 'string') {
    ledger.violation('media', `${label}: session create answered ${describe(created)}`);
    return false;
  }
  const sessionId = created.body.session_id as string;

  const attachmentId = await upload(context, random, label, sessionId, deadline);
  if (attachmentId === null) return false;
  if (random.chance(0.33)) {
    ledger.counters.mediaUploadRepeats += 1;
    await upload(context, random, label, sessionId, deadline);
  }

  const message = messageFor('media', label, random);
  const turn = { turnId: label, message, attachments: [attachmentId] };
  if (!(await admitAndFollow(context, random, sessionId, turn, deadline))) return false;

  const transcript = await apis.send(
    'GET',
    `/api/v1/chat/sessions/${sessionId}/messages`,
    undefined,
    { deadline, random },
  );
  if (!transcript) return false;
  const items = (transcript.body?.items ?? []) as { id: string; role: string; turn_id: string }[];
  const reply = items.find((item) => item.role === 'assistant' && item.turn_id === label);
  if (transcript.status !== 200 || !reply) {
    ledger.violation('media', `${label}: no reply in the transcript (${describe(transcript)})`);
    return false;
  }
  if (!(await listen(context, random, label, sessionId, reply.id, deadline))) return false;
  return generate(context, random, label, sessionId, deadline);
}

/**
 * A turn whose agent generates an image (`/image …`: the demo model calls the built-in
 * `generate_image`), admitted in the same session and followed to its end; the checker
 * finds exactly one generated photo of it however often its call ran (a worker killed
 * between the image's storing and the call's result runs it again: same ids, no copy).
 */
async function generate(
  context: ProtocolClientContext,
  random: Random,
  label: string,
  sessionId: string,
  deadline: number,
): Promise<boolean> {
  const { ledger } = context;
  const turnId = `${label}_image`;
  const turn = { turnId, message: `/image a ${label} drawn for the soak`, attachments: [] };
  if (!(await admitAndFollow(context, random, sessionId, turn, deadline))) return false;
  const record = ledger.media.get(label);
  if (record) record.imageTurnId = turnId;
  ledger.counters.imagesGenerated += 1;
  return true;
}

/**
 * Admits a turn of the session (retried unchanged), acknowledges it as a `media` turn, and
 * follows the session until it ends: true when it ended `done`.
 */
async function admitAndFollow(
  context: ProtocolClientContext,
  random: Random,
  sessionId: string,
  turn: { turnId: string; message: string; attachments: string[] },
  deadline: number,
): Promise<boolean> {
  const { ledger, apis } = context;
  const { turnId, message } = turn;
  ledger.counters.admissionAttempts += 1;
  const admitted = await apis.send(
    'POST',
    '/api/v1/chat/turns',
    {
      session_id: sessionId,
      turn_id: turnId,
      message,
      ...(turn.attachments.length > 0 ? { attachments: turn.attachments } : {}),
    },
    { deadline, random, onRetry: () => (ledger.counters.admissionRetries += 1) },
  );
  if (!admitted) {
    ledger.counters.unacknowledged += 1;
    return false;
  }
  if (admitted.status !== 202 || admitted.body?.session_id !== sessionId) {
    ledger.violation('media', `${turnId}: admission answered ${describe(admitted)}`);
    return false;
  }
  ledger.acknowledge({
    turnId,
    sessionId,
    kind: 'media',
    message,
    sequence: Number(admitted.body.sequence),
  });
  const view: SessionView = { sessionId, cursor: 0, ended: new Map() };
  const followed = await follow(view, sessionId, apis, ledger, random, {
    onEvent: () => {},
    settled: () => view.ended.has(turnId),
    deadline,
  });
  if (!followed) {
    ledger.counters.followTimeouts += 1;
    return false;
  }
  if (view.ended.get(turnId) !== 'done') {
    ledger.violation('media', `${turnId}: ended ${view.ended.get(turnId)}, not done`);
    return false;
  }
  return true;
}

/**
 * Uploads the image with the label as its `Idempotency-Key`, sent again with the same key
 * until an answer below 500 arrives: the attachment id it names (recorded), or null.
 */
async function upload(
  context: ProtocolClientContext,
  random: Random,
  label: string,
  sessionId: string,
  deadline: number,
): Promise<string | null> {
  const { ledger } = context;
  const answer = await sendRaw(
    context,
    random,
    `/api/v1/chat/sessions/${sessionId}/attachments`,
    {
      method: 'POST',
      headers: { 'content-type': 'image/png', 'idempotency-key': label },
      body: png,
    },
    { deadline, onRetry: () => (ledger.counters.mediaUploadRetries += 1) },
  );
  if (!answer) return null;
  const body = parse(answer.bytes);
  if ((answer.status !== 201 && answer.status !== 200) || typeof body?.attachment_id !== 'string') {
    ledger.violation('media', `${label}: upload answered ${answer.status} ${clip(answer.bytes)}`);
    return null;
  }
  if (!ledger.media.has(label)) ledger.counters.mediaUploads += 1;
  ledger.uploaded(label, sessionId, body.attachment_id as string);
  return body.attachment_id as string;
}

/** Asks for the reply read aloud twice: the same WAV both times, else a violation. */
async function listen(
  context: ProtocolClientContext,
  random: Random,
  label: string,
  sessionId: string,
  messageId: string,
  deadline: number,
): Promise<boolean> {
  const { ledger } = context;
  const heard: Buffer[] = [];
  for (let request = 0; request < 2; request++) {
    if (request > 0) await sleep(random.int(0, 300));
    const answer = await sendRaw(
      context,
      random,
      `/api/v1/chat/sessions/${sessionId}/messages/${messageId}/speech`,
      { method: 'GET', headers: {} },
      { deadline, onRetry: () => (ledger.counters.speechRetries += 1) },
    );
    if (!answer) return false;
    if (
      answer.status !== 200 ||
      answer.contentType !== 'audio/wav' ||
      answer.bytes.subarray(0, 4).toString('latin1') !== 'RIFF'
    ) {
      ledger.violation(
        'media speech',
        `${label}: speech of ${messageId} answered ${answer.status} ${answer.contentType} ${clip(answer.bytes)}`,
      );
      return false;
    }
    ledger.counters.speechRequests += 1;
    heard.push(answer.bytes);
  }
  const [first, second] = heard as [Buffer, Buffer];
  if (!first.equals(second)) {
    ledger.violation(
      'media speech',
      `${label}: speech of ${messageId} differs between two requests (${first.byteLength} and ${second.byteLength} bytes): it was not kept`,
    );
  }
  const record = ledger.media.get(label);
  if (record) record.spokenMessageId = messageId;
  return true;
}

/**
 * Sends a request, unchanged, to the API processes in turn until an answer below 500
 * arrives (as http.ts's `Apis.send`, for raw bodies and answers); null past `deadline`.
 */
async function sendRaw(
  context: ProtocolClientContext,
  random: Random,
  path: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: Buffer },
  options: { deadline: number; onRetry: () => void },
): Promise<RawAnswer | null> {
  const { apis } = context;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) {
      options.onRetry();
      await retryPause(attempt, random);
    }
    const answer = await exchange(apis.pick(), path, init).catch(() => null);
    if (answer && answer.status < 500) return answer;
    apis.failures += 1;
    if (Date.now() > options.deadline) return null;
  }
}

interface RawAnswer {
  status: number;
  contentType: string;
  bytes: Buffer;
}

/** One request with the protocol header, its answer's bytes whole. */
async function exchange(
  base: string,
  path: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: Buffer },
): Promise<RawAnswer> {
  const response = await fetch(`${base}${path}`, {
    method: init.method,
    headers: { 'parley-protocol-version': '1', ...init.headers },
    body: init.body ?? null,
    signal: AbortSignal.timeout(attemptTimeoutMs),
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  const contentType = (response.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
  return { status: response.status, contentType, bytes };
}

function parse(bytes: Buffer): any {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
}

function clip(bytes: Buffer): string {
  return bytes.toString('utf8', 0, Math.min(bytes.byteLength, 200));
}

function describe(answer: JsonAnswer): string {
  return `${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`;
}
