import { useState } from 'react';

/** Up to two initials of a name or user id ("Ann Lee" → "AL", "bob" → "B"). */
export function initials(name: string): string {
  const words = name.split(/[\s._@-]+/).filter(Boolean);
  const letters = words.length > 1 ? [words[0], words[words.length - 1]] : words.slice(0, 1);
  return letters.map((word) => [...(word as string)][0]?.toUpperCase() ?? '').join('') || '?';
}

/**
 * A person's picture (their profile's `avatar_url`) with their name as its text
 * alternative; their initials when they have none, or it does not load — an https picture
 * of another host does not: the app's policy loads its own images and data: URLs only.
 */
export function Avatar(props: { name: string; url: string | null | undefined }) {
  const [failed, setFailed] = useState<string | null>(null);
  if (props.url && failed !== props.url) {
    return (
      <img
        className="avatar"
        src={props.url}
        alt={props.name}
        referrerPolicy="no-referrer"
        onError={() => setFailed(props.url ?? null)}
      />
    );
  }
  return (
    <span className="avatar initials" aria-hidden="true">
      {initials(props.name)}
    </span>
  );
}
