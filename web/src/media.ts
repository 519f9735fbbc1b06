import { useEffect, useState } from 'react';
import type { Media, ParleyClient } from 'parley/client';

/**
 * Images and audio in the page. The server answers them only with the bearer key, so an
 * `<img>` or `<audio>` cannot point at the API: the bytes are fetched through the client and
 * shown from an object URL (the content security policy allows `blob:` images).
 *
 * Glossary: an *attachment* is an image of a session a turn carries; a *draft* is an image
 * put in a composer and not sent yet.
 */

export function objectUrlOf(media: Media): string {
  return URL.createObjectURL(new Blob([media.bytes as BlobPart], { type: media.mediaType }));
}

/** Object URLs of attachments already fetched (or sent from this page), by attachment id. */
const attachmentUrls = new Map<string, Promise<string>>();

export function rememberAttachmentUrl(attachmentId: string, url: string): void {
  attachmentUrls.set(attachmentId, Promise.resolve(url));
}

function attachmentUrl(client: ParleyClient, sessionId: string, attachmentId: string) {
  let found = attachmentUrls.get(attachmentId);
  if (!found) {
    found = client.attachmentContent(sessionId, attachmentId).then(objectUrlOf);
    // A failure is not kept: the next render may try again.
    found.catch(() => attachmentUrls.delete(attachmentId));
    attachmentUrls.set(attachmentId, found);
  }
  return found;
}

/** An attachment's object URL once loaded; null until then (or when it cannot be). */
export function useAttachmentUrl(
  client: ParleyClient,
  sessionId: string,
  attachmentId: string,
): string | null {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    attachmentUrl(client, sessionId, attachmentId).then(
      (loaded) => live && setUrl(loaded),
      () => {},
    );
    return () => {
      live = false;
    };
  }, [client, sessionId, attachmentId]);
  return url;
}

/**
 * Which images each turn sent from this browser carried (local storage, per session): the
 * journal's `message` event and the transcript name them (`attachments`), but journals
 * written before they did do not.
 */
const sentKey = (sessionId: string) => `parley.sent.${sessionId}`;

export function sentAttachments(sessionId: string): Record<string, string[]> {
  try {
    const stored: unknown = JSON.parse(localStorage.getItem(sentKey(sessionId)) ?? '{}');
    return stored && typeof stored === 'object' ? (stored as Record<string, string[]>) : {};
  } catch {
    return {};
  }
}

export function rememberSent(sessionId: string, turnId: string, attachmentIds: string[]): void {
  if (attachmentIds.length === 0) return;
  try {
    const sent = sentAttachments(sessionId);
    sent[turnId] = attachmentIds;
    localStorage.setItem(sentKey(sessionId), JSON.stringify(sent));
  } catch {
    // storage full or off: the images show until the page is left
  }
}

/** An image a composer holds before it is sent; uploaded (once) when the message is. */
export interface Draft {
  key: string;
  name: string;
  file: Blob;
  url: string;
  attachmentId?: string | undefined;
  /** The server's refusal: its code and message. */
  error?: string | undefined;
}

let draftCount = 0;

export function draftOf(file: Blob, name: string): Draft {
  draftCount += 1;
  return { key: `d${draftCount}`, name, file, url: URL.createObjectURL(file) };
}

/** Images handed to a conversation's composer before it opens ("Open in a conversation"). */
const handed = new Map<string, Draft[]>();

export function handDrafts(sessionId: string, drafts: Draft[]): void {
  handed.set(sessionId, drafts);
}

export function handedDrafts(sessionId: string): Draft[] {
  return handed.get(sessionId) ?? [];
}

export function forgetHandedDrafts(sessionId: string): void {
  handed.delete(sessionId);
}
