import type { Db } from './db.js';

/** Threads whose session a worker holds now (the fold sets and clears `typing`). */
export async function typingThreads(
  db: Db,
  adapters: string[],
): Promise<{ adapter: string; thread_id: string }[]> {
  const found = await db.query<{ adapter: string; thread_id: string }>(
    `select adapter, thread_id from adapter_threads where typing and adapter = any($1::text[])
      limit 500`,
    [adapters],
  );
  return found.rows;
}
