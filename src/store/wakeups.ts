import type { Db, Queryable } from './db.js';

/**
 * Wake-ups: "session S has events up to N" (RUNTIME.md). They only wake readers and
 * workers; losing one delays, never loses, because both also poll. The same SQL runs on
 * both engines: `pg_notify` inside the writing transaction is delivered at commit, by
 * PGlite in-process and by PostgreSQL to every process's one LISTEN connection.
 */
export const wakeupChannel = 'parley_wakeup';

export type WakeupKind = 'input' | 'events' | 'typing' | 'cancel';

export interface Wakeup {
  kind: WakeupKind;
  sessionId: string;
  sequence: number;
}

export async function notifyWakeup(tx: Queryable, wakeup: Wakeup): Promise<void> {
  await tx.query('select pg_notify($1, $2)', [
    wakeupChannel,
    `${wakeup.kind}:${wakeup.sessionId}:${wakeup.sequence}`,
  ]);
}

/** One subscription per process, fanned out to in-process listeners. */
export class Wakeups {
  private readonly listeners = new Set<(wakeup: Wakeup) => void>();
  private unlisten: (() => Promise<void>) | null = null;

  constructor(private readonly db: Db) {}

  async start(): Promise<void> {
    this.unlisten ??= await this.db.listen(wakeupChannel, (payload) => {
      const [kind, sessionId, sequence] = payload.split(':');
      if (!kind || !sessionId) return;
      const wakeup = { kind: kind as WakeupKind, sessionId, sequence: Number(sequence) };
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
