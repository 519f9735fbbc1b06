import type { NewEvent, ParleyEvent } from '../protocol/events.js';
import type { Db, Queryable } from './db.js';
import { wireEvent } from './eventRows.js';

/**
 * Wake-ups: "session S has events up to N" (RUNTIME.md). They only wake readers and
 * workers; losing one delays, never loses, because both also poll. The same SQL runs on
 * both engines: `pg_notify` is delivered at commit, by PGlite in-process and by PostgreSQL
 * to every process's one LISTEN connection.
 *
 * Most writers notify inside the writing statement. The statements of every turn
 * (admission, the claim that starts a burst or `start_attempt`, `commit_turn`) instead return their wake-up's payload, and
 * the process publishes it once the statement has committed (`publishWakeup`), batched:
 * PostgreSQL holds one cluster-wide lock from a notifying commit's queue insert through its
 * WAL flush, so notifying commits queue behind each other. Published only after the
 * commit, a wake-up never announces what is not durable; a crash between the two loses
 * only the wake-up. On PGlite, whose notifications never leave the process, they go to the
 * process's listeners directly, without a statement (`Db.notifyLocally`).
 *
 * A wake-up may carry the events it announces (when they fit in a notification), so that
 * a process's SSE readers do not have to read the journal for them.
 *
 * Payload: `kind:session_id:sequence:at_ms[:events JSON]`.
 */
export const wakeupChannel = 'parley_wakeup';

/**
 * `access`: who may see the session changed (its open streams re-check); `deleted`: the
 * session is gone (its open streams end).
 */
export type WakeupKind =
  'input' | 'events' | 'typing' | 'cancel' | 'execution' | 'definitions' | 'access' | 'deleted';

export interface Wakeup {
  kind: WakeupKind;
  sessionId: string;
  /** The session's latest sequence when the wake-up was sent. */
  sequence: number;
  /** The events ending at `sequence`, as clients receive them, if the wake-up carried them. */
  events: () => ParleyEvent[] | null;
}

/**
 * The `pg_notify` call of a writing statement, as SQL: `kind`, `session` and `sequence`
 * are SQL expressions; `live` the parameter holding `liveEvents(...)` (or null). `at` is the
 * transaction's `now()`, the default of `events.at`, truncated as `eventRowColumns` does.
 */
export function notifySql(kind: string, session: string, sequence: string, live: string): string {
  return `pg_notify('${wakeupChannel}', ${wakeupSql(kind, session, sequence, live)})`;
}

/** A wake-up's payload as SQL (arguments as `notifySql`), for `publishWakeup` to send. */
export function wakeupSql(kind: string, session: string, sequence: string, live: string): string {
  return `${kind} || ':' || ${session} || ':' || ${sequence}
           || ':' || floor(extract(epoch from now()) * 1000)::bigint || coalesce(':' || ${live}, '')`;
}

const publishStatement = {
  name: 'publish_wakeups',
  text: `select pg_notify('${wakeupChannel}', payload) from unnest($1::text[]) as payload`,
};

/**
 * Sends the wake-ups published during one event-loop turn in one statement, and one such
 * statement at a time: they leave in the order they were published. A failed send is not
 * retried (everyone polls).
 */
class WakeupPublisher {
  private pending: string[] = [];
  private sending = false;

  constructor(private readonly db: Queryable & Pick<Db, 'notifyLocally'>) {}

  publish(payload: string): void {
    this.pending.push(payload);
    if (this.sending) return;
    this.sending = true;
    setImmediate(() => void this.send());
  }

  private async send(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      if (this.db.notifyLocally) {
        this.db.notifyLocally(wakeupChannel, batch);
        continue;
      }
      try {
        await this.db.query(publishStatement, [batch]);
      } catch {
        // The database is unreachable or closed: those wake-ups are lost, polls cover them.
      }
    }
    this.sending = false;
  }
}

const publishers = new WeakMap<Queryable & Pick<Db, 'notifyLocally'>, WakeupPublisher>();

/**
 * Publishes a wake-up whose payload a statement returned (`wakeupSql`). Call it only once
 * that statement has committed: after it returned, or after its transaction did.
 */
export function publishWakeup(
  db: Queryable & Pick<Db, 'notifyLocally'>,
  payload: string | null | undefined,
): void {
  if (!payload) return;
  let publisher = publishers.get(db);
  if (!publisher) publishers.set(db, (publisher = new WakeupPublisher(db)));
  publisher.publish(payload);
}

export async function notifyWakeup(
  tx: Queryable,
  wakeup: { kind: WakeupKind; sessionId: string; sequence: number },
): Promise<void> {
  await tx.query(
    { name: 'notify_wakeup', text: `select ${notifySql('$1', '$2', '$3::bigint', 'null')}` },
    [wakeup.kind, wakeup.sessionId, wakeup.sequence],
  );
}

export function parseWakeup(payload: string): Wakeup | null {
  const parts: string[] = [];
  let from = 0;
  for (let field = 0; field < 4; field++) {
    const colon = payload.indexOf(':', from);
    if (colon === -1) {
      parts.push(payload.slice(from));
      from = payload.length + 1;
      break;
    }
    parts.push(payload.slice(from, colon));
    from = colon + 1;
  }
  const [kind, sessionId, sequence, at] = parts;
  if (!kind || !sessionId || !sequence) return null;
  const live = from <= payload.length ? payload.slice(from) : '';
  const last = Number(sequence);
  let built: ParleyEvent[] | null | undefined;
  return {
    kind: kind as WakeupKind,
    sessionId,
    sequence: last,
    events: () => {
      if (built !== undefined) return built;
      built = null;
      if (live === '' || at === undefined) return built;
      try {
        const events = JSON.parse(live) as NewEvent[];
        const first = last - events.length + 1;
        built = events.map((event, index) =>
          wireEvent(event.type, first + index, Number(at), event.turn_id, event.data),
        );
      } catch {
        built = null;
      }
      return built;
    },
  };
}

/** One subscription per process, fanned out to in-process listeners. */
export class Wakeups {
  private readonly listeners = new Set<(wakeup: Wakeup) => void>();
  private unlisten: (() => Promise<void>) | null = null;

  constructor(private readonly db: Db) {}

  async start(): Promise<void> {
    this.unlisten ??= await this.db.listen(wakeupChannel, (payload) => {
      const wakeup = parseWakeup(payload);
      if (!wakeup) return;
      for (const listener of this.listeners) listener(wakeup);
    });
  }

  subscribe(listener: (wakeup: Wakeup) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    const unlisten = this.unlisten;
    this.unlisten = null;
    this.listeners.clear();
    await unlisten?.();
  }
}
