import type { HttpTransport, Media, RawBody } from './http.js';
import type { Attachment, Page, PhotoInfo, Transcription, VoiceInfo } from './types.js';

/**
 * The client SDK's calls of images and voices (PROTOCOL.md, "Photos", "Voices and
 * speech"): attachments of a session, the photo library, the voice catalog, speech made
 * and heard. `ParleyClient` extends it: these are its methods.
 */
export abstract class MediaCalls {
  abstract readonly http: HttpTransport;

  /**
   * Extension: stores an image (png, jpeg, webp or gif) as an attachment of a session, for
   * a turn to carry (`admitTurn({attachments})`); it lands in the uploader's photo library
   * too. `mediaType` defaults to a Blob's own type. Retried only with an `idempotencyKey`
   * (the server then stores it once).
   */
  uploadAttachment(
    sessionId: string,
    image: RawBody,
    options: { mediaType?: string; idempotencyKey?: string; signal?: AbortSignal } = {},
  ): Promise<Attachment> {
    return this.http.upload(
      `${sessionPath(sessionId)}/attachments`,
      image,
      mediaTypeOf(image, options.mediaType),
      { signal: options.signal, idempotencyKey: options.idempotencyKey },
    );
  }

  /**
   * Extension: attaches one of the caller's photos to a session (JSON `{"photo_id"}` to the
   * same route): an attachment a turn can carry, without adding the photo to the library
   * again. Not retried (a retry attaches it twice).
   */
  attachPhoto(
    sessionId: string,
    photoId: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<Attachment> {
    return this.http.request('POST', `${sessionPath(sessionId)}/attachments`, {
      body: { photo_id: photoId },
      idempotent: false,
      signal: options.signal,
    });
  }

  /** Extension: an attachment's bytes and media type. */
  attachmentContent(
    sessionId: string,
    attachmentId: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<Media> {
    return this.http.media(
      'GET',
      `${sessionPath(sessionId)}/attachments/${encodeURIComponent(attachmentId)}`,
      { signal: options.signal },
    );
  }

  /** Extension: the caller's photos, newest first (of one `origin` when given). */
  listPhotos(
    options: {
      origin?: 'upload' | 'generated';
      limit?: number;
      cursor?: string | null;
      signal?: AbortSignal;
    } = {},
  ): Promise<Page<PhotoInfo>> {
    return this.http.request('GET', '/api/v1/photos', {
      query: { origin: options.origin, limit: options.limit, cursor: options.cursor },
      signal: options.signal,
    });
  }

  /** Extension: one photo of the caller (404 `photo_not_found` for anyone else's). */
  getPhoto(photoId: string, options: { signal?: AbortSignal } = {}): Promise<PhotoInfo> {
    return this.http.request('GET', photoPath(photoId), { signal: options.signal });
  }

  /** Extension: a photo's bytes and media type. */
  photoContent(photoId: string, options: { signal?: AbortSignal } = {}): Promise<Media> {
    return this.http.media('GET', `${photoPath(photoId)}/content`, { signal: options.signal });
  }

  /**
   * Extension: adds an image to the caller's library. Retried only with an `idempotencyKey`.
   * `mediaType` defaults to a Blob's own type.
   */
  uploadPhoto(
    image: RawBody,
    options: {
      mediaType?: string;
      title?: string;
      idempotencyKey?: string;
      signal?: AbortSignal;
    } = {},
  ): Promise<PhotoInfo> {
    return this.http.upload('/api/v1/photos', image, mediaTypeOf(image, options.mediaType), {
      query: { title: options.title },
      signal: options.signal,
      idempotencyKey: options.idempotencyKey,
    });
  }

  /** Extension: copies an attachment of a session the caller may see into its library. */
  photoFromAttachment(
    attachmentId: string,
    options: { title?: string | null; signal?: AbortSignal } = {},
  ): Promise<PhotoInfo> {
    const body: Record<string, unknown> = { attachment_id: attachmentId };
    if (options.title !== undefined) body.title = options.title;
    return this.http.request('POST', '/api/v1/photos', {
      body,
      idempotent: false,
      signal: options.signal,
    });
  }

  /** Extension: renames a photo (`null` clears its title). */
  updatePhoto(
    photoId: string,
    change: { title: string | null },
    options: { signal?: AbortSignal } = {},
  ): Promise<PhotoInfo> {
    return this.http.request('PATCH', photoPath(photoId), {
      body: { title: change.title },
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Extension: deletes a photo. Not retried: a retry after a lost answer reads 404. */
  deletePhoto(photoId: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    return this.http.request('DELETE', photoPath(photoId), {
      idempotent: false,
      signal: options.signal,
    });
  }

  /** Extension: the voice catalog (ids for `speak`, an agent's `voice`, `system_voice`). */
  listVoices(
    options: { signal?: AbortSignal } = {},
  ): Promise<{ items: VoiceInfo[]; transcription: boolean }> {
    return this.http.request('GET', '/api/v1/voices', { signal: options.signal });
  }

  /**
   * Extension: `text` spoken in `voice` (default: the server's default voice): the audio
   * bytes and their media type (`audio/wav` for espeak and piper). Retried like a read:
   * speaking a text again changes nothing but the bill.
   */
  speak(
    text: string,
    options: { voice?: string; format?: string; signal?: AbortSignal } = {},
  ): Promise<Media> {
    const body: Record<string, unknown> = { text };
    if (options.voice !== undefined) body.voice = options.voice;
    if (options.format !== undefined) body.format = options.format;
    return this.http.media('POST', '/api/v1/speech', {
      body,
      idempotent: true,
      signal: options.signal,
    });
  }

  /**
   * Extension: what a recording says (`audio/webm`, `audio/ogg`, `audio/wav`, ...;
   * `mediaType` defaults to a Blob's own type, parameters such as `;codecs=opus` kept);
   * `language` is a hint (ISO 639-1). 404 `transcription_unavailable` when the server
   * takes no speech (`listVoices().transcription` says). One attempt: each is billed.
   */
  transcribe(
    audio: RawBody,
    options: { mediaType?: string; language?: string; signal?: AbortSignal } = {},
  ): Promise<Transcription> {
    return this.http.upload(
      '/api/v1/transcriptions',
      audio,
      mediaTypeOf(audio, options.mediaType),
      {
        query: { language: options.language },
        signal: options.signal,
      },
    );
  }

  /** Extension: a message of a session read aloud in its agent's voice (kept once made). */
  messageSpeech(
    sessionId: string,
    messageId: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<Media> {
    return this.http.media(
      'GET',
      `${sessionPath(sessionId)}/messages/${encodeURIComponent(messageId)}/speech`,
      { signal: options.signal },
    );
  }
}

export function sessionPath(sessionId: string): string {
  return `/api/v1/chat/sessions/${encodeURIComponent(sessionId)}`;
}

function photoPath(photoId: string): string {
  return `/api/v1/photos/${encodeURIComponent(photoId)}`;
}

/** The content type an upload is sent as: the one given, else a Blob's own. */
function mediaTypeOf(image: RawBody, given: string | undefined): string {
  const type = given ?? (typeof Blob !== 'undefined' && image instanceof Blob ? image.type : '');
  return type === '' ? 'application/octet-stream' : type;
}
