/** People as Parley keeps them (the users table): preferences and a profile, per tenant and user. */
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

/** What users saved as preferences, by user (those never saved: absent). */
export type SavedPreferences = Record<string, Record<string, unknown>>;

/**
 * The saved preferences of several users of a tenant, as SQL: a JSON object by user.
 * Arguments are SQL expressions (the tenant; a `text[]` of users).
 */
export const preferencesSql = (tenant: string, users: string) =>
  `(select coalesce(json_object_agg(u.user_name, u.preferences), '{}'::json) from users u
     where u.tenant = ${tenant} and u.user_name = any(${users}::text[]))`;

/** A user's profile as shown to people: null where never set. */
export interface UserProfile {
  display_name: string | null;
  avatar_url: string | null;
}

export async function readUserProfile(
  db: Queryable,
  tenant: string,
  user: string,
): Promise<UserProfile> {
  const found = await db.query<UserProfile>(
    {
      name: 'read_user_profile',
      text: 'select display_name, avatar_url from users where tenant = $1 and user_name = $2',
    },
    [tenant, user],
  );
  return found.rows[0] ?? { display_name: null, avatar_url: null };
}

/** Changes the profile fields given (undefined: kept), making the user's row if needed. */
export async function saveUserProfile(
  db: Queryable,
  tenant: string,
  user: string,
  change: Partial<UserProfile>,
): Promise<UserProfile> {
  const saved = await db.query<UserProfile>(
    `insert into users (tenant, user_name, display_name, avatar_url)
     values ($1, $2, $3, $4)
     on conflict (tenant, user_name) do update
        set display_name = case when $5 then excluded.display_name else users.display_name end,
            avatar_url = case when $6 then excluded.avatar_url else users.avatar_url end,
            updated_at = now()
     returning display_name, avatar_url`,
    [
      tenant,
      user,
      change.display_name ?? null,
      change.avatar_url ?? null,
      change.display_name !== undefined,
      change.avatar_url !== undefined,
    ],
  );
  return saved.rows[0] as UserProfile;
}
