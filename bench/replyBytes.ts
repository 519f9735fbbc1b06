import { randomBytes } from 'node:crypto';
import { requestJson, SseStream } from './http.js';
import { type RemoteServer } from './remote.js';
import { median, round } from './stats.js';

/**
 * Bytes stored per turn against the reply's length (issue 6, item 15): a 1 KB and a 10 KB
 * reply, forty turns each in one session. A turn's bytes are its rows: the turn, its
 * transcript messages and its journal events (`pg_column_size`, heap and TOAST data as
 * stored, no indexes). The text is pseudo-random words, which compress about as badly
 * as real prose does under TOAST's pglz. Fitting bytes = slope × text + overhead over the
 * two sizes gives how many times the text is stored (target ≤ 2.5) and the fixed cost; the
 * first and last ten turns of a session compare per-turn bytes early and late in history.
 */

const userText = 'Please write it out in full, as long as it needs to be.';
const turnsPerSize = 40;

function prose(bytes: number, seed: string): string {
  const words: string[] = [];
  let length = 0;
  let state = Number.parseInt(seed, 16) || 1;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state;
  };
  while (length < bytes) {
    const size = 2 + (next() % 8);
    let word = '';
    for (let index = 0; index < size; index++) word += String.fromCharCode(97 + (next() % 26));
    words.push(word);
    length += word.length + 1;
  }
  return `${words.join(' ')}.`.slice(0, bytes);
}

export interface ReplySizeResult {
  reply_bytes: number;
  text_bytes_per_turn: number;
  stored_bytes_per_turn: number;
  times_the_text: number;
  first_ten_bytes_per_turn: number;
  last_ten_bytes_per_turn: number;
}

async function oneSize(server: RemoteServer, replyBytes: number): Promise<ReplySizeResult> {
  await server.setReply(prose(replyBytes, randomBytes(4).toString('hex')));
  try {
    const created = await requestJson(server.url, 'POST', '/api/v1/chat/sessions', {});
    const sessionId = created.body.session_id as string;
    const stream = await SseStream.open(server.url, sessionId);
    try {
      for (let index = 0; index < turnsPerSize; index++) {
        const turnId = `bytes_${replyBytes}_${index}_${randomBytes(3).toString('hex')}`;
        const mark = stream.frames.length;
        await requestJson(server.url, 'POST', '/api/v1/chat/turns', {
          session_id: sessionId,
          turn_id: turnId,
          message: userText,
        });
        await stream.waitFor(
          (frame) => frame.event === 'done' && frame.data.turn_ids?.includes(turnId),
          mark,
          60_000,
        );
      }
    } finally {
      stream.close();
    }
    const rows = await server.query<{ bytes: number; text: number }>(
      `select pg_column_size(t.*)
              + coalesce((select sum(pg_column_size(m.*)) from messages m
                           where m.session_id = t.session_id and m.turn_id = t.turn_id), 0)
              + coalesce((select sum(pg_column_size(e.*)) from events e
                           where e.session_id = t.session_id and e.turn_id = t.turn_id), 0)
                as bytes,
              (select coalesce(sum(octet_length(m.content)), 0) from messages m
                where m.session_id = t.session_id and m.turn_id = t.turn_id) as text
         from turns t where t.session_id = $1 order by t.position`,
      [sessionId],
    );
    const bytes = rows.map((row) => Number(row.bytes));
    const text = rows.map((row) => Number(row.text));
    const mean = (values: number[]) =>
      values.reduce((sum, value) => sum + value, 0) / values.length;
    return {
      reply_bytes: replyBytes,
      text_bytes_per_turn: Math.round(median(text)),
      stored_bytes_per_turn: Math.round(median(bytes)),
      times_the_text: round(median(bytes) / median(text), 2),
      first_ten_bytes_per_turn: Math.round(mean(bytes.slice(0, 10))),
      last_ten_bytes_per_turn: Math.round(mean(bytes.slice(-10))),
    };
  } finally {
    await server.setReply(null);
  }
}

export async function measureReplyBytes(server: RemoteServer) {
  const small = await oneSize(server, 1024);
  const large = await oneSize(server, 10240);
  const slope =
    (large.stored_bytes_per_turn - small.stored_bytes_per_turn) /
    (large.text_bytes_per_turn - small.text_bytes_per_turn);
  return {
    sizes: [small, large],
    /** How many times each byte of text is stored (bytes = slope × text + overhead). */
    slope: round(slope, 2),
    fixed_overhead_bytes: Math.round(
      small.stored_bytes_per_turn - slope * small.text_bytes_per_turn,
    ),
  };
}
