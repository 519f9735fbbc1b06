import { describe, expect, it } from 'vitest';
import { listMigrations, migrate, migrationsApplied } from '../src/store/migrate.js';
import { openPglite } from '../src/store/pglite.js';
import { openPostgres } from '../src/store/postgres.js';
import { freshStorage } from './support/db.js';

describe('migrations', () => {
  it('apply once, are recorded, and a reopened database is up to date', async () => {
    const fresh = await freshStorage({ empty: true });
    const open = () =>
      fresh.storage.url ? openPostgres(fresh.storage.url, 4) : openPglite(fresh.storage.dataDir);
    try {
      const db = await open();
      expect(await migrationsApplied(db)).toBe(false);
      expect(await migrate(db)).toEqual(listMigrations().map((migration) => migration.name));
      expect(await migrationsApplied(db)).toBe(true);
      await db.close();
      const again = await open();
      expect(await migrate(again)).toEqual([]);
      // several processes starting at once: each migration is applied exactly once
      const racers = await Promise.all([migrate(again), migrate(again), migrate(again)]);
      expect(racers.flat()).toEqual([]);
      const recorded = await again.query('select id from parley_migrations');
      expect(recorded.rowCount).toBe(listMigrations().length);
      await again.close();
    } finally {
      await fresh.drop();
    }
  });

  it('lets concurrent first runs race safely', async () => {
    const fresh = await freshStorage({ empty: true });
    const dbs = fresh.storage.url
      ? await Promise.all([1, 2, 3].map(() => openPostgres(fresh.storage.url as string, 2)))
      : [await openPglite(fresh.storage.dataDir)];
    try {
      const applied = await Promise.all(dbs.map((db) => migrate(db)));
      expect(applied.flat().sort()).toEqual(listMigrations().map((migration) => migration.name));
    } finally {
      for (const db of dbs) await db.close();
      await fresh.drop();
    }
  });
});
