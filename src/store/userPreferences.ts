import type { Queryable } from './db.js';

/** A user's saved preferences (null: never saved), as stored. */
export async function readUserPreferences(
  db: Queryable,
  tenant: string,
  user: string,
): Promise<Record<string, unknown> | null> {
  const found = await db.query<{ preferences: Record<string, unknown> }>(
    {
      name: 'read_user_preferences',
      text: 'select preferences from users where tenant = $1 and user_name = $2',
    },
    [tenant, user],
  );
  return found.rows[0]?.preferences ?? null;
}

/** Saves a user's preferences whole, making the user's row on the first save. */
export async function saveUserPreferences(
  db: Queryable,
  tenant: string,
  user: string,
  preferences: Record<string, unknown>,
): Promise<void> {
  await db.query(
    `insert into users (tenant, user_name, preferences) values ($1, $2, $3::jsonb)
     on conflict (tenant, user_name)
     do update set preferences = excluded.preferences, updated_at = now()`,
    [tenant, user, JSON.stringify(preferences)],
  );
}

/** The saved preferences of several users of a tenant, by user (those never saved: absent). */
export async function readPreferencesOf(
  db: Queryable,
  tenant: string,
  users: string[],
): Promise<Map<string, Record<string, unknown>>> {
  const found = await db.query<{ user_name: string; preferences: Record<string, unknown> }>(
    {
      name: 'read_preferences_of',
      text: 'select user_name, preferences from users where tenant = $1 and user_name = any($2::text[])',
    },
    [tenant, users],
  );
  return new Map(found.rows.map((row) => [row.user_name, row.preferences]));
}
