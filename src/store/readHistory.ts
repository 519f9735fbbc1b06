import type { Queryable, Statement } from './db.js';
import { preferencesSql, type SavedPreferences } from './users.js';

/** A transcript message as the model's history sees it (raw reply where it differs). */
export interface HistoryMessage {
  role: 'user' | 'assistant' | 'system';
  author: string;
  content: string;
  turn_id: string | null;
  sequence: number;
  /** The images a user message's turn carried. */
  attachments: string[] | null;
}

/**
 * The history before a burst, as SQL (the model's prompt keeps what fits its window):
 * newest first, at most `limit` messages and about `bytes` of text, the messages a rewind
 * left out skipped; a JSON array oldest first. Arguments are SQL expressions.
 */
export function historySql(h: {
  session: string;
  before: string;
  limit: string;
  bytes: string;
}): string {
  return `(select coalesce(json_agg(h order by h.sequence), '[]'::json) from (
              select role, author, content, turn_id, sequence, attachments from (
                select m.role, m.author, coalesce(m.raw_content, m.content) as content,
                       m.turn_id, m.sequence,
                       (select t.attachments from turns t
                         where m.role = 'user' and t.tenant = m.tenant
                           and t.turn_id = m.turn_id) as attachments,
                       sum(octet_length(coalesce(m.raw_content, m.content)))
                         over (order by m.sequence desc) as running
                  from messages m
                 where m.session_id = ${h.session} and m.sequence < ${h.before}
                   -- A rewind leaves out what came after its checkpoint.
                   and not exists (select 1 from rewinds r
                                    where r.session_id = ${h.session} and r.at_sequence < ${h.before}
                                      and m.sequence > r.to_sequence and m.sequence < r.at_sequence)
                 order by m.sequence desc
                 limit ${h.limit}) w
               where w.running - octet_length(w.content) < ${h.bytes}) h)`;
}

/**
 * Whether the tenant has a spending budget, as SQL: the attempt's model steps reserve
 * against budgets only if so (runtime/spending.ts), without a read of their own.
 */
export const budgetedSql = (tenant: string) =>
  `exists (select 1 from budgets bg where bg.tenant = ${tenant})`;

/**
 * What a burst's start reads (`AttemptContext`), as the columns `history`, `budgeted` and
 * `preferences` of a select list; the arguments are SQL expressions (`authors` a text
 * array). Every statement that starts a burst reads it with these.
 */
export function attemptContextSql(c: {
  session: string;
  before: string;
  limit: string;
  bytes: string;
  tenant: string;
  authors: string;
}): string {
  return `${historySql(c)} as history, ${budgetedSql(c.tenant)} as budgeted,
          ${preferencesSql(c.tenant, c.authors)} as preferences`;
}

const readStatement: Statement = {
  name: 'read_history',
  text: `select ${attemptContextSql({ session: '$1', before: '$2', limit: '$3', bytes: '$4', tenant: '$5', authors: '$6' })}`,
};

/** What a burst's prompt and budgets need of the store, read as its attempt starts. */
export interface AttemptContext {
  history: HistoryMessage[];
  budgeted: boolean;
  /** The saved preferences of the burst's authors (runtime/userContext.ts). */
  preferences: SavedPreferences;
}

/**
 * What `startAttempt` reads besides its writes, for a burst whose attempt the claim
 * already started (claimSession): the history before it, whether budgets apply, and what
 * the burst's authors saved as preferences.
 */
export async function readHistory(
  db: Queryable,
  read: {
    sessionId: string;
    tenant: string;
    historyBefore: number;
    historyLimit: number;
    historyBytes: number;
    authors: string[];
  },
): Promise<AttemptContext> {
  const found = await db.query<AttemptContext>(readStatement, [
    read.sessionId,
    read.historyBefore,
    read.historyLimit,
    read.historyBytes,
    read.tenant,
    read.authors,
  ]);
  return found.rows[0] as AttemptContext;
}

/** What a claim read for the burst it started (`ClaimStart.context`), and with which window. */
export type ClaimedContext = AttemptContext & {
  read: { before: number; limit: number; bytes: number; authors: string[] };
};

/**
 * The claim's read, as `readHistory` would read it for this start: the same history
 * boundary, limit and authors, and a byte bound at least the agent's — the history is then
 * cut to the agent's bound as `historySql` cuts it (newest first, a message kept while the
 * text after it is under the bound). Otherwise null: the burst reads it.
 */
export function claimedContext(
  context: ClaimedContext | undefined,
  read: { historyBefore: number; historyLimit: number; historyBytes: number; authors: string[] },
): AttemptContext | null {
  if (!context) return null;
  const window = context.read;
  const same =
    window.before === read.historyBefore &&
    window.limit === read.historyLimit &&
    window.bytes >= read.historyBytes &&
    window.authors.length === read.authors.length &&
    window.authors.every((author, index) => author === read.authors[index]);
  if (!same) return null;
  let first = context.history.length;
  let after = 0;
  while (first > 0 && after < read.historyBytes) {
    first -= 1;
    after += Buffer.byteLength((context.history[first] as HistoryMessage).content);
  }
  return {
    history: first === 0 ? context.history : context.history.slice(first),
    budgeted: context.budgeted,
    preferences: context.preferences,
  };
}
