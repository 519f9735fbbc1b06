import { useEffect, useRef, useState } from 'react';
import type { ParleyClient } from 'parley/client';

/** How a person is shown: their profile's display name and avatar (null until set). */
export interface Person {
  displayName: string | null;
  avatarUrl: string | null;
}

/**
 * The profiles of the people who wrote in a conversation, by user id. The journal's
 * `message` events name only the author; the transcript (`GET …/messages`) carries each
 * person's display name and avatar, so it is read again whenever an author appears whom
 * the page does not know yet (an author no page of it names is asked about once).
 */
export function useAuthors(
  client: ParleyClient,
  sessionId: string,
  authors: string[],
): Map<string, Person> {
  const [people, setPeople] = useState(() => new Map<string, Person>());
  const asked = useRef(new Set<string>());
  const unknown = authors.filter((author) => !asked.current.has(author));
  const wanted = [...new Set(unknown)].sort().join('\n');

  // The conversation's page is keyed by its session: an answer always belongs to it.
  useEffect(() => {
    if (!wanted) return;
    for (const author of wanted.split('\n')) asked.current.add(author);
    client.listMessages(sessionId, { limit: 100 }).then(
      (page) => {
        setPeople((current) => {
          const next = new Map(current);
          for (const message of page.items) {
            if (message.role !== 'user') continue;
            next.set(message.author, {
              displayName: message.author_display_name ?? null,
              avatarUrl: message.author_avatar_url ?? null,
            });
          }
          return next;
        });
      },
      () => {
        // Shown by their user ids; the next new author asks again.
        for (const author of wanted.split('\n')) asked.current.delete(author);
      },
    );
  }, [client, sessionId, wanted]);

  return people;
}
