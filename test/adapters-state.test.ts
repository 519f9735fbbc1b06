import { readFileSync } from 'node:fs';
import { postgresSchemaStatements } from '@chat-adapter/state-pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ParleyChatState } from '../src/adapters/state.js';
import { createLogger } from '../src/log.js';
import type { Db } from '../src/store/db.js';
import { openTestDb } from './support/db.js';

let db: Db;
let close: () => Promise<void>;
let state: ParleyChatState;

beforeAll(async () => {
  ({ db, close } = await openTestDb());
  state = new ParleyChatState(db, createLogger({ level: 'silent' }));
  await state.connect();
});
afterAll(async () => {
  await close();
});

describe("the Chat SDK's state on Parley's database (state-pg)", () => {
  it("applies the adapter's own schema through migration 0040, statement for statement", () => {
    const migration = readFileSync(
      new URL('../src/store/migrations/0040_chat_state.sql', import.meta.url),
      'utf8',
    );
    const statements = migration
      .split(/;\s*$/m)
      .map((statement) =>
        statement
          .split('\n')
          .filter((line) => !line.trim().startsWith('--'))
          .join('\n')
          .trim(),
      )
      .filter((statement) => statement.length > 0);
    expect(statements).toEqual(postgresSchemaStatements.map((statement) => statement.trim()));
  });

  it('keeps subscriptions, locks, values and lists in Parley tables', async () => {
    await state.subscribe('slack:C1:1.0');
    expect(await state.isSubscribed('slack:C1:1.0')).toBe(true);
    expect(await state.isSubscribed('slack:C1:2.0')).toBe(false);
    const lock = await state.acquireLock('slack:C1:1.0', 10_000);
    expect(lock).not.toBeNull();
    expect(await state.acquireLock('slack:C1:1.0', 10_000)).toBeNull();
    expect(await state.extendLock(lock!, 20_000)).toBe(true);
    await state.releaseLock(lock!);
    expect(await state.acquireLock('slack:C1:1.0', 10_000)).not.toBeNull();
    await state.set('slack:user:U1', { name: 'alice' }, 60_000);
    expect(await state.get('slack:user:U1')).toEqual({ name: 'alice' });
    expect(await state.setIfNotExists('once', 1)).toBe(true);
    expect(await state.setIfNotExists('once', 2)).toBe(false);
    await state.appendToList('history', 'a', { maxLength: 2 });
    await state.appendToList('history', 'b', { maxLength: 2 });
    await state.appendToList('history', 'c', { maxLength: 2 });
    expect(await state.getList('history')).toEqual(['b', 'c']);
    const rows = await db.query(
      `select 1 from chat_state_subscriptions where thread_id = 'slack:C1:1.0'`,
    );
    expect(rows.rowCount).toBe(1);
  });

  it('never stores the markers that would drop a retried event', async () => {
    for (const key of [
      'dedupe:slack:1.0',
      'slack:event-delivered:Ev1',
      'telegram:webhook-update:b:7',
    ]) {
      expect(await state.setIfNotExists(key, true, 60_000)).toBe(true);
      expect(await state.setIfNotExists(key, true, 60_000)).toBe(true);
      await state.set(key, true, 60_000);
      expect(await state.get(key)).toBeNull();
    }
    const stored = await db.query(
      `select 1 from chat_state_cache where cache_key like 'dedupe:%' or cache_key like '%event-delivered%'
          or cache_key like 'telegram:webhook-update:%'`,
    );
    expect(stored.rowCount).toBe(0);
  });
});
